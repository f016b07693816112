/**
 * Redis loses every key of the deployment's prefix (the job, its lock, the flow, the queue's sets)
 * in the middle of a mirror run carried by two worker PROCESSES. The worker holding the job keeps
 * reading until its lock renewal fails, while the reconciler (in the workers) re-enqueues the run
 * from SQL and the other worker may take it at once: two attempts race on one run and only the
 * fenced one may commit. The run ends with the changes counted exactly once and the project equal
 * to the table. Once unpartitioned and once as a flow of partitions (whose jobs the reconciler
 * re-creates one by one, without their parent). Plain Redis (redis-cluster-restart.test.ts covers
 * a lost Cluster master, where one is available).
 */
import { describe, expect, it } from 'vitest';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { eventStoreOf } from '../helpers/events.js';
import { deleteKeysUnder, until } from '../helpers/job-platform.js';
import { redisLossWorkerEnv, workerProcessesFixture } from '../helpers/worker-processes.js';
import { spawnBin } from '../helpers/spawn.js';
import { fillEventsTable, sqliteSourceFixture } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { changeEvTable, differencesFromEvTable, EV_MIRROR_IMPORT, NO_DIFFERENCES } from '../helpers/mirror-table.js';

const ROWS = 60_000;
/** 1000 rows changed early in the read, 1000 deleted late. */
const AT = { updated: 5000, deleted: 50000 };

describe.each(dbKinds())('Redis loss mid mirror run, two worker processes, store on %s', (kind) => {
  const w = workerProcessesFixture(kind);

  async function run(partitionRows: number) {
    const { t, app, procs, sources } = w;
    const src = await sqliteSourceFixture.create();
    sources.push(src);
    await fillEventsTable(src, ROWS);
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_MIRROR_IMPORT);
    const env = redisLossWorkerEnv(w, partitionRows);
    for (let i = 0; i < 2; i++) procs.push(spawnBin('worker', env));

    const baseline = await manualSync(api, importId);
    const first = await waitForRun(api, importId, baseline.run_id, 60_000);
    expect(first).toMatchObject({ status: 'SUCCEEDED', num_events_imported: ROWS });
    // Two processes share a SQLite file: a batch waits for the write lock, it does not fail on it.
    expect(first.log.join('\n')).not.toMatch(/database is locked/);

    // In the warehouse: 1000 rows changed early in the read, 1000 deleted late, 500 added at the end.
    await changeEvTable(src, ROWS, AT);

    const { run_id } = await manualSync(api, importId);
    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= 8000, 60_000, 20);
    expect(await deleteKeysUnder(app.queues.redis)).toBeGreaterThan(0);
    expect(await rowsRead()).toBeLessThan(ROWS - 500);

    const done = await waitForRun(api, importId, run_id, 60_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS - 500, num_events_imported: 500, num_events_updated: 1000, num_events_deleted: 1000, rows_skipped: 0, error: null });
    expect(done.log.join('\n')).not.toMatch(/database is locked/);

    // The project equals the table: every id once, the changed rows changed, the deleted ones gone, the added ones there.
    expect(await differencesFromEvTable(eventStoreOf(t.db), p.id, ROWS, AT)).toEqual(NO_DIFFERENCES);
    return done;
  }

  it('unpartitioned: exactly 500 inserted / 1000 updated / 1000 deleted, and the project equals the table', async () => {
    const done = await run(ROWS * 2);
    expect(done.attempts).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('a flow of partitions: exactly 500 inserted / 1000 updated / 1000 deleted, and the project equals the table', async () => {
    const done = await run(ROWS / 4);
    expect(done.partitions.total).toBeGreaterThanOrEqual(4);
    expect(done.partitions.done).toBe(done.partitions.total);
  }, 120_000);
});

/**
 * Redis loses every key of the deployment's prefix (the job, its lock, the flow, the queue's sets)
 * in the middle of an incremental (time_based) run carried by two worker PROCESSES, while the
 * warehouse keeps receiving rows. The worker holding the job keeps reading until its lock renewal
 * fails, the reconciler re-enqueues the run from SQL and the other worker may take it at once:
 * two attempts race on one run and only the fenced one may commit. The rows that arrived during
 * the run are read by it or by the follow-up run, never by both and never by neither: the
 * project ends with every row of the table exactly once, and no run stores a row another already
 * stored. Once unpartitioned and once as a flow of partitions (split by the insert time; the
 * reconciler re-creates their jobs one by one, without their parent). Plain Redis.
 */
import { describe, expect, it } from 'vitest';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { eventStoreOf } from '../helpers/events.js';
import { deleteKeysUnder, until } from '../helpers/job-platform.js';
import { redisLossWorkerEnv, workerProcessesFixture } from '../helpers/worker-processes.js';
import { spawnBin } from '../helpers/spawn.js';
import { appendEvRows, createTimeBasedTable, EV_TIME_BASED_IMPORT, insertTimeOf, storedEvRows, watermarkOf } from '../helpers/time-based-table.js';
import { sqliteSourceFixture } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, syncAndWait, waitForRun, type Api } from '../helpers/warehouse.js';

/** Rows of the first run, of the run that loses Redis, arriving during that run, and after it. */
const BASE = 2000;
const BIG = 60_000;
const LATE = 3000;
const AFTER = 1000;
const TOTAL = BASE + BIG + LATE + AFTER;

describe.each(dbKinds())('Redis loss mid time_based run, two worker processes, store on %s', (kind) => {
  const w = workerProcessesFixture(kind);

  async function run(partitionRows: number) {
    const { t, app, procs, sources } = w;
    const src = await sqliteSourceFixture.create();
    sources.push(src);
    await createTimeBasedTable(src);
    await appendEvRows(src, 0, BASE);
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_TIME_BASED_IMPORT);
    const env = redisLossWorkerEnv(w, partitionRows);
    for (let i = 0; i < 2; i++) procs.push(spawnBin('worker', env));

    const baseline = await syncAndWait(api, importId, 60_000);
    expect(baseline).toMatchObject({ status: 'SUCCEEDED', rows_read: BASE, num_events_imported: BASE, num_deduplicated: 0 });
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(BASE - 1));

    // The warehouse receives BIG rows; the next run reads only those. Mid-run more rows arrive, then Redis loses everything.
    await appendEvRows(src, BASE, BIG);
    const { run_id } = await manualSync(api, importId);
    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= 8000, 60_000, 20);
    await appendEvRows(src, BASE + BIG, LATE);
    expect(await deleteKeysUnder(app.queues.redis)).toBeGreaterThan(0);
    expect(await rowsRead()).toBeLessThan(BIG);

    // The run reads its BIG rows once, and the late rows too if its read began after they arrived
    // (all or none: one statement) — and the row at the watermark again, known already.
    const done = await waitForRun(api, importId, run_id, 60_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', num_deduplicated: 1, rows_skipped: 0, error: null });
    expect([BIG, BIG + LATE]).toContain(done.num_events_imported);
    expect(done.rows_read).toBe(done.num_events_imported + 1);
    expect(done.log.join('\n')).toMatch(`where inserted_at >= ${insertTimeOf(BASE - 1)}`);
    expect(done.log.join('\n')).not.toMatch(/database is locked/);
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(BASE + done.num_events_imported - 1));

    // The follow-up run imports exactly what the faulted one did not; one more finds nothing new.
    await appendEvRows(src, BASE + BIG + LATE, AFTER);
    const rest = BIG + LATE + AFTER - done.num_events_imported;
    expect(await syncAndWait(api, importId, 60_000)).toMatchObject({ status: 'SUCCEEDED', rows_read: rest + 1, num_events_imported: rest, num_deduplicated: 1 });
    expect(await syncAndWait(api, importId, 60_000)).toMatchObject({ status: 'SUCCEEDED', rows_read: 1, num_events_imported: 0, num_deduplicated: 1 });
    expect(await watermarkOf(api, importId)).toBe(insertTimeOf(TOTAL - 1));

    // Every row of the table once: no id missing, none stored twice (storedEvRows throws on a second copy).
    const { stored, missing } = await storedEvRows(eventStoreOf(t.db), p.id, TOTAL);
    expect(missing).toEqual([]);
    expect(stored).toBe(TOTAL);
    return done;
  }

  it(`unpartitioned: the project holds all ${TOTAL} rows once`, async () => {
    const done = await run(BIG * 2);
    expect(done.attempts).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it(`a flow of partitions by insert time: the project holds all ${TOTAL} rows once`, async () => {
    const done = await run(BIG / 4);
    expect(done.partitions.total).toBeGreaterThanOrEqual(4);
    expect(done.partitions.done).toBe(done.partitions.total);
  }, 120_000);
});

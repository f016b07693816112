/**
 * A worker PROCESS killed with -9 in the middle of a large sync: the run stays in SQL with the
 * checkpoint of its last committed batch, a restarted worker takes the stalled job over, re-reads
 * from the first row (the committed rows found again as nothing new), and the project ends with
 * exactly every row as an event — nothing lost, nothing doubled, counted once. Per source type
 * (SQLite on both stores; MySQL and Redshift-mode PostgreSQL on the SQLite store).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { until } from '../helpers/job-platform.js';
import { serviceEnv, spawnBin } from '../helpers/spawn.js';
import { bigqueryFixtureWith, databricksFixtureWith } from '../helpers/cloud-sources.js';
import { EV_EVENTS_IMPORT, fillEventsTable, mysqlSourceFixture, redshiftSourceFixture, sqliteSourceFixture, type WarehouseSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { workerProcessesFixture } from '../helpers/worker-processes.js';

type Case = { fixture: WarehouseSourceFixture; kind: ReturnType<typeof dbKinds>[number]; rows: number };
const cases: Case[] = [
  ...dbKinds().map((kind) => ({ fixture: sqliteSourceFixture, kind, rows: 500_000 })),
  ...[mysqlSourceFixture, redshiftSourceFixture].filter((f) => f.available()).map((fixture) => ({ fixture, kind: 'sqlite' as const, rows: 200_000 })),
  // The cloud stand-ins with realistic pages (5000 rows), through the real clients from a spawned worker.
  ...[bigqueryFixtureWith(5000), databricksFixtureWith(5000)].map((fixture) => ({ fixture, kind: 'sqlite' as const, rows: 200_000 })),
];

describe.each(cases.map((c) => [c.fixture.type, c.kind, c] as const))('worker killed mid-sync of a %s source, store on %s', (_type, kind, { fixture, rows: ROWS }) => {
  const w = workerProcessesFixture(kind);
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    src = await fixture.create();
    w.sources.push(src);
    await fillEventsTable(src, ROWS);
  }, 120_000);

  it(`resumes after kill -9 and stores exactly ${ROWS} events`, async () => {
    const { t, app, procs } = w;
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), { ...EV_EVENTS_IMPORT, table_params: { table: src.tableRef('ev') } });
    const env = serviceEnv(t.url, app.config, {
      // A killed worker's job is taken over once its lock lapses: keep that short for the test.
      JOB_LOCK_MS: '2000',
      // One unpartitioned run resuming from its own checkpoint (partitioned runs: partitioned-runs.test.ts).
      SYNC_PARTITION_ROWS: String(ROWS * 2),
      RECONCILE_INTERVAL_SEC: '2',
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
    });
    const { run_id } = await manualSync(api, importId);
    const first = spawnBin('worker', env);
    procs.push(first);

    const rowsRead = async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read);
    await until(async () => (await rowsRead()) >= 100_000, 120_000, 100);
    first.child.kill('SIGKILL');
    await first.exited;

    const run = await t.db('sync_runs').where({ id: run_id }).first();
    const committed = Number(run.rows_read);
    expect(run.status).toBe('RUNNING');
    expect(committed).toBeGreaterThanOrEqual(100_000);
    expect(committed).toBeLessThan(ROWS);
    // The checkpoint and the events were committed together: nothing beyond the checkpoint is stored.
    expect(await countEvents(t.db, p.id)).toBe(committed);

    const second = spawnBin('worker', env);
    procs.push(second);
    const done = await waitForRun(api, importId, run_id, 120_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS, num_events_imported: ROWS, rows_skipped: 0, error: null });
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    expect(done.log.join('\n')).toMatch(/attempt \d+ \(job [^)]*\): re-reading from the first row/);
    expect(await countEvents(t.db, p.id)).toBe(ROWS);
    await second.kill('SIGTERM');
  }, 240_000);
});

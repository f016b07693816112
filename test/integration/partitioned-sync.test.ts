/**
 * Partitioned sync runs (CONTRACT "Large runs") against real Redis/BullMQ, a real store and real
 * SQLite and PostgreSQL sources (each with a store of its own kind): a run over SYNC_PARTITION_ROWS becomes a flow (a parent job, one
 * child per partition, ranges pushed down to the source) that two workers share; every row is
 * stored once; the watermark moves only when every partition committed. A partition that fails
 * for good fails the run with its error and leaves the watermark; a re-run converges.
 * (Workers run in this process here; test/e2e/partitioned-runs.test.ts uses worker processes.)
 */
import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { listPartitions } from '../../src/db/run-partitions.repo.js';
import { findRun } from '../../src/db/sync-runs.repo.js';
import { catalogNameOf } from '../../src/queue/catalog.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';
import { redisKinds, redisOverrides, type RedisKind } from '../helpers/redis-kinds.js';
import { mysqlSourceFixture, postgresSourceFixture, redshiftSourceFixture, sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, history, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';

const T0 = Date.UTC(2024, 5, 1);
const N = 1000;
const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ id: from + k, ev: `e${(from + k) % 3}`, ts: new Date(T0 + (from + k) * 1000), who: `u${(from + k) % 11}` }));

// A source-side error for the rows listed in `bad` only: malformed JSON in SQLite, division by
// zero in PostgreSQL, a scalar subquery of two rows in MySQL.
const failing = { sqlite: `json('x' || "id")`, postgres: `(1 / ("id" - "id"))::text`, redshift: `(1 / ("id" - "id"))::text`, mysql: '(SELECT 1 UNION SELECT 2)' } as const;
/** An identifier in the source's own SQL. */
const ident = (type: string, name: string) => (type === 'mysql' ? `\`${name}\`` : `"${name}"`);

const sources = [sqliteSourceFixture, postgresSourceFixture, mysqlSourceFixture, redshiftSourceFixture].filter((f) => f.available());
const cases = sources.flatMap((f) => redisKinds().map((r) => [f.type, r, f] as [string, RedisKind, typeof f]));

describe.each(cases)('partitioned sync from a %s source on %s', (type, redisKind, fixture) => {
  let t: TestDb;
  let app: TestApp;
  let src: WarehouseSourceHandle;
  const workers: InProcessWorker[] = [];

  beforeAll(async () => {
    // The store on the same kind as the source: PostgreSQL's row locks and SQLite's one writer both get exercised.
    t = await createTestDb(type === 'postgres' || type === 'redshift' ? 'postgres' : 'sqlite');
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), SYNC_PARTITION_ROWS: 150, WAREHOUSE_BATCH_SIZE: 40, WAREHOUSE_READER_THREAD: 'off', WORKER_CONCURRENCY: 2 });
    src = await fixture.create();
    await src.createTable({
      name: 'clicks',
      columns: [
        { name: 'id', type: 'integer', notNull: true },
        { name: 'ev', type: 'text', notNull: true },
        { name: 'ts', type: 'timestamp', notNull: true },
        { name: 'who', type: 'text' },
      ],
    });
    await src.insertRows('clicks', rows(0, N));
    await src.createTable({ name: 'bad', columns: [{ name: 'id', type: 'integer', notNull: true }] });
    for (let i = 0; i < 2; i++) workers.push(await startInProcessWorker(t.db, app.config, { queueNames: ['warehouse-sync'] }));
  }, 60_000);
  afterAll(async () => {
    for (const w of workers) await w.close();
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await src?.cleanup();
    await app?.close();
    await t?.destroy();
  });

  it('splits into a flow of partitions, stores every row once and moves the watermark at the end', async () => {
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: { table: src.tableRef('clicks') },
      sync_mode: 'time_based',
      insert_time_column_name: 'ts',
      schedule: 'api_only',
      event_column_name: 'ev',
      time_column_name: 'ts',
      user_column_name: 'who',
    });
    // The bars the dashboard shows for the partitions while they run (their ends say 100% anyway).
    const queue = app.queues.queues['warehouse-sync'];
    const events = new QueueEvents(queue.name, { connection: queue.opts.connection, prefix: queue.opts.prefix });
    await events.waitUntilReady();
    const partitionBars: number[] = [];
    events.on('progress', ({ jobId, data }) => {
      if (jobId.includes('-part-')) partitionBars.push((data as { progress: number }).progress);
    });
    const { run_id } = await manualSync(api, importId);
    const run = await waitForRun(api, importId, run_id, 60_000);
    await events.close();
    expect(run).toMatchObject({ status: 'SUCCEEDED', rows_read: N, num_events_imported: N, num_deduplicated: 0, rows_skipped: 0 });
    expect(partitionBars.filter((p) => p > 0 && p < 100).length, JSON.stringify(partitionBars)).toBeGreaterThan(0);
    const parts = await listPartitions(t.db, 'sync', run_id);
    expect(parts.length).toBeGreaterThanOrEqual(6);
    expect(parts.every((x) => x.status === 'done')).toBe(true);
    // Every row in exactly one partition.
    expect(parts.reduce((s, x) => s + (x.counts.rowsRead ?? 0), 0)).toBe(N);
    expect(run.partitions).toEqual({ total: parts.length, done: parts.length });
    expect(run.workers).toEqual([expect.stringMatching(/^.+:\d+$/)]);
    expect(run.log.join('\n')).toMatch(new RegExp(`split into ${parts.length} partitions[\\s\\S]*succeeded: ${N} rows read in ${parts.length} partitions`));
    expect(await countEvents(t.db, p.id)).toBe(N);
    expect((await call(api, 'GET', `/imports/${importId}`)).body.results.watermark).toMatch(/^2024-06-01[ T]00:16:39/);

    // The flow: the parent says whose run it is and reached 100%; each child names its partition.
    const q = app.queues.queues['warehouse-sync'];
    const parent = await until(async () => {
      const j = await q.getJob(`warehouse-sync-${run_id}-finish`);
      return (await j?.getState()) === 'completed' ? j : undefined;
    });
    expect(catalogNameOf(parent!.name)).toBe('warehouse-sync-finish');
    expect(parent!.name).toContain(`project ${p.id}`);
    expect(parent!.name).toContain(`import ${importId}`);
    expect(parent!.progress).toMatchObject({ progress: 100, partitions_done: parts.length, partitions_total: parts.length });
    const child = await q.getJob(`warehouse-sync-${run_id}-part-1`);
    expect(child!.name).toMatch(new RegExp(`^warehouse-sync-part · project ${p.id} .*· import ${importId} · partition 2 of ${parts.length}$`));

    // Deleting the import takes its runs' partitions with the runs (partitions have no foreign key).
    expect((await call(api, 'DELETE', `/imports/${importId}`)).status).toBe(200);
    expect(await listPartitions(t.db, 'sync', run_id)).toEqual([]);
  }, 90_000);

  it('a partition that fails for good fails the run with its error, leaves the watermark; a re-run converges', async () => {
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    await src.insertRows('bad', [{ id: 700 }]);
    const { sourceId, importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: {
        query: `SELECT ${['id', 'ev', 'ts', 'who'].map((c) => ident(type, c)).join(', ')}, CASE WHEN ${ident(type, 'id')} IN (SELECT ${ident(type, 'id')} FROM ${src.tableRef('bad')}) THEN ${failing[type as keyof typeof failing]} ELSE '' END AS ${ident(type, 'note')} FROM ${src.tableRef('clicks')}`,
      },
      sync_mode: 'time_based',
      insert_time_column_name: 'ts',
      schedule: 'api_only',
      event_column_name: 'ev',
      time_column_name: 'ts',
      user_column_name: 'who',
    });
    const first = await manualSync(api, importId);
    const failed = await waitForRun(api, importId, first.run_id, 60_000);
    const parts = await listPartitions(t.db, 'sync', first.run_id);
    const bad = parts.find((x) => x.status === 'failed');
    expect(bad, JSON.stringify(parts.map((x) => [x.idx, x.status, x.error]))).toBeDefined();
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toMatch(new RegExp(`^partition ${bad!.idx + 1} of ${parts.length}: .+`));
    expect(failed.error).toContain(bad!.error!);
    expect((await call(api, 'GET', `/imports/${importId}`)).body.results.watermark).toBeNull();
    expect(await countEvents(t.db, p.id)).toBeLessThan(N);

    // The source is fixed; the next run stores the rest, and nothing twice.
    await src.exec(`DELETE FROM ${src.tableRef('bad')}`);
    const second = await manualSync(api, importId);
    expect(await waitForRun(api, importId, second.run_id, 60_000)).toMatchObject({ status: 'SUCCEEDED', rows_read: N });
    expect(await countEvents(t.db, p.id)).toBe(N);
    expect((await call(api, 'GET', `/imports/${importId}`)).body.results.watermark).toMatch(/^2024-06-01[ T]00:16:39/);
    expect((await findRun(t.db, second.run_id))!.status).toBe('SUCCEEDED');
    expect((await history(api, importId))[0].partitions.total).toBeGreaterThanOrEqual(6);

    // Deleting the source takes its imports' runs' partitions too.
    expect((await call(api, 'DELETE', `/${sourceId}`)).status).toBe(200);
    expect(await listPartitions(t.db, 'sync', first.run_id)).toEqual([]);
    expect(await listPartitions(t.db, 'sync', second.run_id)).toEqual([]);
  }, 120_000);
});

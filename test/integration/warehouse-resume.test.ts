/**
 * A resumed sync re-reads from the first row (CONTRACT §3, docs/warehouse.md "Crash safety"): the
 * table may change between two attempts, and a position (LIMIT … OFFSET <rows committed>) in a
 * changed table names no fixed row — a row deleted among those already read would shift the
 * position past a row never read. Here an attempt commits one batch and stops (shutdown), a row
 * it read is deleted (and one changed) in the warehouse, and the next attempt must leave the
 * project exactly as the table is, with every count exact:
 * - mirror: the live rows all there (none swept), the deleted one gone, the changed one changed;
 * - one_time (append): every row loaded once, the deleted one's event kept (append never deletes);
 * - a mirror partition resumed within its range: the same, the other partitions untouched.
 * Handlers called directly, as a worker would. SQLite source (and the Snowflake stand-in through
 * the real snowflake-sdk); stores SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRun } from '../../src/db/sync-runs.repo.js';
import { listPartitions } from '../../src/db/run-partitions.repo.js';
import { runWarehouseSync } from '../../jobs/warehouse-sync.handler.js';
import { runSyncPartition } from '../../jobs/warehouse-sync.partition.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { get, lines, qs } from '../helpers/read-back.js';
import { snowflakeSourceFixture, sqliteSourceFixture, type WarehouseSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, jobContext, manualSync, type Api } from '../helpers/warehouse.js';

const T0 = Date.UTC(2024, 5, 1);
const ids = (n: number) => Array.from({ length: n }, (_, i) => `k${String(i).padStart(2, '0')}`);
const rowsOf = (keys: string[]) => keys.map((id, i) => ({ id, event: 'e', ts: T0 + i * 1000, user_id: `u${i}` }));
const COLUMNS = [
  { name: 'id', type: 'text' as const, notNull: true },
  { name: 'event', type: 'text' as const, notNull: true },
  { name: 'ts', type: 'integer' as const, notNull: true },
  { name: 'user_id', type: 'text' as const },
];

interface Setup {
  t: TestDb;
  app: TestApp;
  src: WarehouseSourceHandle;
}

async function setUp(kind: 'sqlite' | 'postgres', fixture: WarehouseSourceFixture, overrides: Record<string, unknown>): Promise<Setup> {
  const t = await createTestDb(kind);
  const src = await fixture.create();
  const app = await startTestApp(t.db, { ...src.serverConfig, WAREHOUSE_READER_THREAD: 'off', ...overrides });
  return { t, app, src };
}

async function tearDown(s: Partial<Setup>): Promise<void> {
  await s.app?.queues.queues['warehouse-sync'].obliterate({ force: true });
  await s.app?.close();
  await s.src?.cleanup();
  await s.t?.destroy();
}

async function newApi(s: Setup): Promise<{ p: SeededProject; api: Api }> {
  const p = await seedProject(s.t.db);
  return { p, api: { url: s.app.url, basic: p.basic, projectId: p.id } };
}

/** The project's events, by insert id (each once, or the test fails on the count). */
async function eventsById(s: Setup, p: SeededProject): Promise<Map<string, string>> {
  const res = await get(`${s.app.url}/api/2.0/export${qs({ project_id: p.id, from_date: '2024-01-01', to_date: '2025-01-01' })}`, p.basic);
  expect(res.status).toBe(200);
  const evs = lines(res.text);
  const out = new Map(evs.map((e) => [String(e.properties.$insert_id), e.event]));
  expect(out.size).toBe(evs.length);
  return out;
}

/** Attempt 1 of a run: commits its first batch, then stops as on SIGTERM. */
async function interruptedAfterFirstBatch(s: Setup, runId: string, jobId: string): Promise<void> {
  const ac = new AbortController();
  const ctx = jobContext(s.t.db, s.app.config, s.app.queues, { signal: ac.signal, jobId, attempt: 1 });
  ctx.progress = async () => ac.abort(new Error('SIGTERM'));
  expect(await runWarehouseSync(runId, ctx)).toBe('interrupted');
}

const eventsImport = (table: string, extra: Record<string, unknown>) => ({
  import_type: 'events',
  table_params: { table },
  schedule: 'api_only',
  event_column_name: 'event',
  time_column_name: 'ts',
  insert_id_column_name: 'id',
  user_column_name: 'user_id',
  ...extra,
});

const cases: ['sqlite' | 'postgres', string, WarehouseSourceFixture][] = [
  ...dbKinds().map((k) => [k, 'sqlite', sqliteSourceFixture] as ['sqlite' | 'postgres', string, WarehouseSourceFixture]),
  ['sqlite', 'snowflake', snowflakeSourceFixture],
];

describe.each(cases)('a resumed sync re-reads from the first row (store on %s, %s source)', (kind, _type, fixture) => {
  let s: Setup;

  beforeAll(async () => {
    s = await setUp(kind, fixture, { WAREHOUSE_BATCH_SIZE: 4 });
  }, 60_000);
  afterAll(async () => tearDown(s ?? {}));

  it('mirror: a row already read is deleted and another changed before the retry — the project equals the table, nothing live swept, counts exact', async () => {
    const { p, api } = await newApi(s);
    await s.src.createTable({ name: 'mir', columns: COLUMNS });
    await s.src.insertRows('mir', rowsOf(ids(10)));
    const { importId } = await createSourceAndImport(api, s.src.sourceBody(), eventsImport(s.src.tableRef('mir'), { sync_mode: 'mirror' }));
    const base = await manualSync(api, importId);
    expect(await runWarehouseSync(base.run_id, jobContext(s.t.db, s.app.config, s.app.queues, { jobId: base.job_id }))).toBe('succeeded');
    expect([...(await eventsById(s, p)).keys()].sort()).toEqual(ids(10));

    const { run_id, job_id } = await manualSync(api, importId);
    await interruptedAfterFirstBatch(s, run_id, job_id);
    expect(await findRun(s.t.db, run_id)).toMatchObject({ status: 'QUEUED', rowsRead: 4 });
    // Meanwhile in the warehouse: k01 (read by attempt 1) deleted, k02 (read too) changed.
    await s.src.exec(`DELETE FROM mir WHERE id = 'k01'`);
    await s.src.exec(`UPDATE mir SET event = 'changed' WHERE id = 'k02'`);

    const ctx2 = jobContext(s.t.db, s.app.config, s.app.queues, { jobId: job_id, attempt: 2 });
    expect(await runWarehouseSync(run_id, ctx2)).toBe('succeeded');
    const run = (await findRun(s.t.db, run_id))!;
    expect(run).toMatchObject({ status: 'SUCCEEDED', rowsRead: 9, numImported: 0, numUpdated: 1, numDeleted: 1, numDeduplicated: 0, rowsSkipped: 0 });
    expect(run.log.join('\n')).toMatch(/attempt 2 \(job .*\): re-reading from the first row/);

    const events = await eventsById(s, p);
    expect([...events.keys()].sort()).toEqual(ids(10).filter((k) => k !== 'k01'));
    expect(events.get('k02')).toBe('changed');
    expect(events.get('k04')).toBe('e');
  });

  it('one_time: a row already read is deleted before the retry — every row loaded once, imported and duplicates exact', async () => {
    const { p, api } = await newApi(s);
    await s.src.createTable({ name: 'once', columns: COLUMNS });
    await s.src.insertRows('once', rowsOf(ids(10)));
    const { importId } = await createSourceAndImport(api, s.src.sourceBody(), eventsImport(s.src.tableRef('once'), { sync_mode: 'one_time' }));
    const { run_id, job_id } = await manualSync(api, importId);
    await interruptedAfterFirstBatch(s, run_id, job_id);
    expect(await findRun(s.t.db, run_id)).toMatchObject({ status: 'QUEUED', rowsRead: 4, numImported: 4 });
    await s.src.exec(`DELETE FROM once WHERE id = 'k01'`);

    expect(await runWarehouseSync(run_id, jobContext(s.t.db, s.app.config, s.app.queues, { jobId: job_id, attempt: 2 }))).toBe('succeeded');
    // Append never deletes: k01's event stays; the nine rows the table holds are read once more, the three stored before are not duplicates.
    expect((await findRun(s.t.db, run_id))!).toMatchObject({ status: 'SUCCEEDED', rowsRead: 9, numImported: 10, numDeduplicated: 0, rowsSkipped: 0 });
    expect([...(await eventsById(s, p)).keys()].sort()).toEqual(ids(10));
  });

  it('one_time: a retry after rows were committed counts what it finds again as nothing new, and a third attempt too', async () => {
    const { p, api } = await newApi(s);
    await s.src.createTable({ name: 'thrice', columns: COLUMNS });
    await s.src.insertRows('thrice', rowsOf(ids(10)));
    const { importId } = await createSourceAndImport(api, s.src.sourceBody(), eventsImport(s.src.tableRef('thrice'), { sync_mode: 'one_time' }));
    const { run_id, job_id } = await manualSync(api, importId);
    await interruptedAfterFirstBatch(s, run_id, job_id);
    // Attempt 2 re-reads the four rows (duplicates, discounted), commits four more, and stops.
    const ac = new AbortController();
    const ctx2 = jobContext(s.t.db, s.app.config, s.app.queues, { signal: ac.signal, jobId: job_id, attempt: 2 });
    let batches = 0;
    ctx2.progress = async () => {
      batches += 1;
      if (batches === 2) ac.abort(new Error('SIGTERM'));
    };
    expect(await runWarehouseSync(run_id, ctx2)).toBe('interrupted');
    expect((await findRun(s.t.db, run_id))!).toMatchObject({ rowsRead: 8, numImported: 8, numDeduplicated: 0 });
    expect(await runWarehouseSync(run_id, jobContext(s.t.db, s.app.config, s.app.queues, { jobId: job_id, attempt: 3 }))).toBe('succeeded');
    expect((await findRun(s.t.db, run_id))!).toMatchObject({ status: 'SUCCEEDED', rowsRead: 10, numImported: 10, numDeduplicated: 0, rowsSkipped: 0 });
    expect([...(await eventsById(s, p)).keys()].sort()).toEqual(ids(10));
  });
});

describe.each(dbKinds())('a resumed mirror partition re-reads its range from its first row (store on %s)', (kind) => {
  let s: Setup;

  beforeAll(async () => {
    s = await setUp(kind, sqliteSourceFixture, { WAREHOUSE_BATCH_SIZE: 2, SYNC_PARTITION_ROWS: 5 });
  }, 60_000);
  afterAll(async () => tearDown(s ?? {}));

  /** Plans the run (attempt 1 of its job) and returns its partitions' indexes. */
  async function plan(runId: string, jobId: string): Promise<number[]> {
    expect(await runWarehouseSync(runId, jobContext(s.t.db, s.app.config, s.app.queues, { jobId }))).toBe('partitioned');
    const parts = await listPartitions(s.t.db, 'sync', runId);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    return parts.map((x) => x.idx);
  }
  const part = (runId: string, idx: number, attempt = 1, signal?: AbortSignal) =>
    runSyncPartition({ runId, part: idx }, jobContext(s.t.db, s.app.config, s.app.queues, { jobId: `part-${idx}-${attempt}`, attempt, signal }));

  it('a row the interrupted partition read is deleted: it alone is swept, every live row stays, counts exact', async () => {
    const { p, api } = await newApi(s);
    await s.src.createTable({ name: 'pmir', columns: COLUMNS });
    await s.src.insertRows('pmir', rowsOf(ids(20)));
    const { importId } = await createSourceAndImport(api, s.src.sourceBody(), eventsImport('pmir', { sync_mode: 'mirror' }));
    const base = await manualSync(api, importId);
    for (const idx of await plan(base.run_id, base.job_id)) await part(base.run_id, idx);
    expect((await findRun(s.t.db, base.run_id))!).toMatchObject({ status: 'SUCCEEDED', numImported: 20 });

    const { run_id, job_id } = await manualSync(api, importId);
    const [first, ...rest] = await plan(run_id, job_id);
    // The first partition (from k00) commits one batch (k00, k01) and stops.
    const ac = new AbortController();
    const ctx = jobContext(s.t.db, s.app.config, s.app.queues, { signal: ac.signal, jobId: 'part-0-1', attempt: 1 });
    ctx.progress = async () => ac.abort(new Error('SIGTERM'));
    expect(await runSyncPartition({ runId: run_id, part: first! }, ctx)).toBe('interrupted');
    await s.src.exec(`DELETE FROM pmir WHERE id = 'k01'`);
    await s.src.exec(`UPDATE pmir SET event = 'changed' WHERE id = 'k02'`);

    expect(await part(run_id, first!, 2)).toBe('done');
    for (const idx of rest) await part(run_id, idx);
    const run = (await findRun(s.t.db, run_id))!;
    expect(run).toMatchObject({ status: 'SUCCEEDED', rowsRead: 19, numImported: 0, numUpdated: 1, numDeleted: 1, numDeduplicated: 0, rowsSkipped: 0 });
    expect(run.log.join('\n')).toMatch(/re-reading its range from the first row/);
    const events = await eventsById(s, p);
    expect([...events.keys()].sort()).toEqual(ids(20).filter((k) => k !== 'k01'));
    expect(events.get('k02')).toBe('changed');
  });
});

/**
 * The sync handler's run lifecycle, called directly (as a worker would): shutdown mid-run keeps
 * the committed batches and the next attempt re-reads from the first row, counting nothing twice; a failing run never moves the time_based
 * watermark; a source that no longer matches the import fails the run with a clear error; a
 * newer attempt fences an older one out, and starts from the run as it is when it takes over; a
 * deleted import cancels its run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { findRun, startAttempt, type SyncRun } from '../../src/db/sync-runs.repo.js';
import { toJson } from '../../src/db/knex.js';
import { PermanentError, RetryableError } from '../../src/lib/errors.js';
import { runWarehouseSync } from '../../jobs/warehouse-sync.handler.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, TEST_WAREHOUSE_REACH, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, history, jobContext, manualSync, type Api } from '../helpers/warehouse.js';

const T0 = Date.UTC(2024, 5, 1);
const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, k) => ({ id: from + k, ev: 'tick', ts: new Date(T0 + (from + k) * 1000), who: `u${(from + k) % 7}`, ins: new Date(T0 + (from + k) * 1000) }));

describe.each(crossKinds(dbKinds()))('sync run lifecycle on %s, queues on %s', (kind, redisKind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  let api: Api;
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), WAREHOUSE_BATCH_SIZE: 10, WAREHOUSE_READER_THREAD: 'off' });
    src = await sqliteSourceFixture.create();
    for (const name of ['a', 'b', 'c', 'd']) {
      await src.createTable({
        name,
        columns: [
          { name: 'id', type: 'integer', notNull: true },
          { name: 'ev', type: 'text', notNull: true },
          { name: 'ts', type: 'timestamp', notNull: true },
          { name: 'who', type: 'text' },
          { name: 'ins', type: 'timestamp', notNull: true },
        ],
      });
      await src.insertRows(name, rows(0, 100));
    }
  });
  afterAll(async () => {
    await src?.cleanup();
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await t?.destroy();
  });

  const newProject = async () => {
    p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
  };
  const eventsImport = (table: string, extra: Record<string, unknown> = {}) => ({
    import_type: 'events',
    table_params: { table },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_column_name: 'ev',
    time_column_name: 'ts',
    user_column_name: 'who',
    ...extra,
  });

  it('shutdown after a batch: the run goes back to QUEUED with its checkpoint, and the next attempt re-reads from the first row, counting nothing twice', async () => {
    await newProject();
    const { importId } = await createSourceAndImport(api, src.sourceBody(), eventsImport('a'));
    const { run_id, job_id } = await manualSync(api, importId);
    const ac = new AbortController();
    const ctx = jobContext(t.db, app.config, app.queues, { signal: ac.signal, jobId: job_id });
    const progress = ctx.progress;
    ctx.progress = async (v) => {
      await progress(v);
      ac.abort(); // SIGTERM arrives right after the first batch committed
    };
    expect(await runWarehouseSync(run_id, ctx)).toBe('interrupted');
    let run = (await findRun(t.db, run_id))!;
    expect(run).toMatchObject({ status: 'QUEUED', rowsRead: 10, numImported: 10, attempts: 1 });
    expect(await countEvents(t.db, p.id)).toBe(10);

    expect(await runWarehouseSync(run_id, jobContext(t.db, app.config, app.queues, { jobId: job_id }))).toBe('succeeded');
    run = (await findRun(t.db, run_id))!;
    expect(run).toMatchObject({ status: 'SUCCEEDED', rowsRead: 100, numImported: 100, numDeduplicated: 0, attempts: 2 });
    expect(run.log.join('\n')).toMatch(/interrupted after row 10 \(shutdown\); will resume[\s\S]*attempt 2 .*re-reading from the first row[\s\S]*succeeded: 100 rows read, 100 imported/);
    expect(await countEvents(t.db, p.id)).toBe(100);
    // Running a finished run again does nothing.
    expect(await runWarehouseSync(run_id, jobContext(t.db, app.config, app.queues, { jobId: job_id }))).toBe('already-finished');
  });

  it('a run that fails leaves the time_based watermark alone; a source that no longer matches fails clearly', async () => {
    await newProject();
    const { importId } = await createSourceAndImport(api, src.sourceBody(), eventsImport('b', { sync_mode: 'time_based', insert_time_column_name: 'ins' }));
    const first = await manualSync(api, importId);
    expect(await runWarehouseSync(first.run_id, jobContext(t.db, app.config, app.queues, { jobId: first.job_id }))).toBe('succeeded');
    const watermark = (await call(api, 'GET', `/imports/${importId}`)).body.results.watermark;
    expect(watermark).toBe('2024-06-01 00:01:39.000');

    await src.insertRows('b', rows(100, 20));
    await src.exec('ALTER TABLE b DROP COLUMN who');
    const second = await manualSync(api, importId);
    await expect(runWarehouseSync(second.run_id, jobContext(t.db, app.config, app.queues, { jobId: second.job_id }))).rejects.toBeInstanceOf(PermanentError);
    const [failed] = await history(api, importId);
    expect(failed).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/the source no longer matches the import: user_column_name: column 'who' does not exist/) });
    expect((await call(api, 'GET', `/imports/${importId}`)).body.results.watermark).toBe(watermark);
    expect(await countEvents(t.db, p.id)).toBe(100);
  });

  it('a source error that no retry fixes fails at once; any other error sends the run back to QUEUED to retry', async () => {
    await newProject();
    const { importId, sourceId } = await createSourceAndImport(api, src.sourceBody(), eventsImport('c'));
    const { run_id, job_id } = await manualSync(api, importId);
    // The source's file is gone.
    const box = jobContext(t.db, app.config, app.queues, { jobId: job_id, attempt: 1 });
    const sealed = (await t.db('warehouse_sources').where({ id: sourceId }).first()).config_sealed;
    await t.db('warehouse_sources').where({ id: sourceId }).update({ config_sealed: box.secrets.seal(JSON.stringify({ path: `${TEST_WAREHOUSE_REACH.WAREHOUSE_SQLITE_ALLOWED_DIRS}/nonexistent-dir/w.sqlite` })) });
    await expect(runWarehouseSync(run_id, box)).rejects.toBeInstanceOf(PermanentError);
    // A missing file is permanent: FAILED at once, with the reason.
    expect((await findRun(t.db, run_id))!).toMatchObject({ status: 'FAILED', error: expect.stringMatching(/SQLite file not found/) });
    await t.db('warehouse_sources').where({ id: sourceId }).update({ config_sealed: sealed });

    // An unexpected error (here: the store's events table briefly unusable) is retried instead.
    const next = await manualSync(api, importId);
    await t.db.schema.renameTable('events', 'events_away');
    try {
      await expect(runWarehouseSync(next.run_id, jobContext(t.db, app.config, app.queues, { jobId: next.job_id, attempt: 1 }))).rejects.not.toBeInstanceOf(PermanentError);
    } finally {
      await t.db.schema.renameTable('events_away', 'events');
    }
    const queued = (await findRun(t.db, next.run_id))!;
    expect(queued.status).toBe('QUEUED');
    expect(queued.log.join('\n')).toMatch(/attempt 1 failed: .*; will retry/);
    expect(await runWarehouseSync(next.run_id, jobContext(t.db, app.config, app.queues, { jobId: next.job_id, attempt: 2 }))).toBe('succeeded');
    expect(await countEvents(t.db, p.id)).toBe(100);
  });

  it('an older attempt that wakes up late is fenced out; a deleted import cancels its run', async () => {
    await newProject();
    const { importId } = await createSourceAndImport(api, src.sourceBody(), eventsImport('d'));
    const { run_id, job_id } = await manualSync(api, importId);
    // Attempt 1 commits one batch, then "stalls" (its worker is presumed dead) …
    const stalled = new AbortController();
    const ctx1 = jobContext(t.db, app.config, app.queues, { signal: stalled.signal, jobId: job_id });
    let gate: (() => void) | undefined;
    let batches = 0;
    const paused = new Promise<void>((resolve) => (gate = resolve));
    let resume: (() => void) | undefined;
    ctx1.progress = async () => {
      batches += 1;
      if (batches === 1) {
        gate!();
        await new Promise<void>((r) => (resume = r));
      }
    };
    const first = runWarehouseSync(run_id, ctx1);
    await paused;
    // … attempt 2 takes over and finishes the run …
    expect(await runWarehouseSync(run_id, jobContext(t.db, app.config, app.queues, { jobId: job_id }))).toBe('succeeded');
    // … and attempt 1's next write matches nothing: it stops without touching the run.
    resume!();
    await expect(first).rejects.toBeInstanceOf(RetryableError);
    expect((await findRun(t.db, run_id))!).toMatchObject({ status: 'SUCCEEDED', rowsRead: 100, numImported: 100 });
    expect(await countEvents(t.db, p.id)).toBe(100);

    const again = await manualSync(api, importId);
    expect((await call(api, 'DELETE', `/imports/${importId}`)).status).toBe(200);
    expect(await runWarehouseSync(again.run_id, jobContext(t.db, app.config, app.queues, { jobId: again.job_id }))).toBe('missing');
  });

  it('an attempt starts from the run as it is when it takes over, not as its worker first read it; a later start backs off', async () => {
    await newProject();
    const { importId } = await createSourceAndImport(api, src.sourceBody(), eventsImport('a'));
    const { run_id } = await manualSync(api, importId);
    const seen = (await findRun(t.db, run_id))!;
    // The attempt about to be fenced out (its Redis lock lost, its process still running) commits a batch after that read.
    await t.db('sync_runs')
      .where({ id: run_id })
      .update({ checkpoint: toJson({ ...seen.checkpoint, offset: 10 }), rows_read: 10, num_imported: 10 });
    const asItIs = (run: SyncRun) => ({ checkpoint: run.checkpoint, log: run.log });
    const started = await startAttempt(t.db, run_id, seen.attempts, { now: Date.now() }, asItIs);
    expect(started).toMatchObject({ attempt: seen.attempts + 1, checkpoint: { offset: 10 }, run: { rowsRead: 10, numImported: 10 } });
    expect((await findRun(t.db, run_id))!).toMatchObject({ status: 'RUNNING', attempts: seen.attempts + 1, checkpoint: { offset: 10 } });
    // A second worker that read the run before that start does not take it over in turn.
    expect(await startAttempt(t.db, run_id, seen.attempts, { now: Date.now() }, asItIs)).toBeUndefined();
  });
});

/**
 * A worker PROCESS sent SIGTERM (a deploy, a scale-down) in the middle of a mirror run — while it
 * reads the table, or while it sweeps the rows that vanished from it: it stops the way the
 * service does — the batch (or sweep chunk) in flight commits, the run or its partition goes back
 * to queued, its job back to `wait` without using an attempt — and exits 0 within
 * SHUTDOWN_TIMEOUT_MS, with the project holding exactly what the committed batches wrote and
 * counted. A fresh worker process re-reads from the first row (or, the read done, only sweeps),
 * and the project ends equal to the table with every change counted exactly once. Unpartitioned
 * and as a flow of partitions (whose last partition sweeps; when that sweep is cut short, the
 * flow's parent job finishes it). SQLite source; SQLite and PostgreSQL stores (the kill -9 of a
 * mirror run: warehouse-mirror-crash.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { findRun, type SyncRun } from '../../src/db/sync-runs.repo.js';
import { listPartitions } from '../../src/db/run-partitions.repo.js';
import { warehouseSyncPartJobId } from '../../src/queue/job-ids.js';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { countEvents, eventStoreOf } from '../helpers/events.js';
import { until } from '../helpers/job-platform.js';
import { workerProcessesFixture } from '../helpers/worker-processes.js';
import { serviceEnv, startWorkerProcess, terminate } from '../helpers/spawn.js';
import { fillEventsTable, sqliteSourceFixture } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';
import { changeEvTable, differencesFromEvTable, EV_MIRROR_IMPORT, NO_DIFFERENCES, storedUrlsById } from '../helpers/mirror-table.js';

const ROWS = 60_000;
/**
 * 1000 rows changed early in the read (before a SIGTERM in the read); 30,000 deleted, so the
 * sweep takes fifteen commits (2000 keys each) and a SIGTERM after the first lands between two.
 */
const AT = { updated: 5000, deleted: 25_000, deletedRows: 30_000 };
const AFTER = { rowsRead: ROWS - AT.deletedRows + 500, imported: 500, updated: 1000, deleted: AT.deletedRows };
const SHUTDOWN_TIMEOUT_MS = 10_000;

/** When the SIGTERM comes: 8000 rows into the read, or once the sweep has committed its first deletes. */
type Moment = 'read' | 'sweep';
const reached: Record<Moment, (run: SyncRun) => boolean> = {
  read: (run) => run.rowsRead >= 8000,
  sweep: (run) => run.numDeleted > 0,
};

describe.each(dbKinds())('SIGTERM mid mirror run, store on %s', (kind) => {
  const w = workerProcessesFixture(kind);

  /**
   * A mirrored `ev` table synced once, then changed, and a second run under way on one worker
   * process, which gets SIGTERM at `moment`. Returns after the exit, with the run as it was left.
   */
  async function sigtermMidMirrorRun(partitionRows: number, moment: Moment) {
    const { t, app, procs, sources } = w;
    const src = await sqliteSourceFixture.create();
    sources.push(src);
    await fillEventsTable(src, ROWS);
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_MIRROR_IMPORT);
    const env = serviceEnv(t.url, app.config, {
      // Small batches keep the read going well past the SIGTERM.
      WAREHOUSE_BATCH_SIZE: '1000',
      SYNC_PARTITION_ROWS: String(partitionRows),
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      WORKER_CONCURRENCY: '1',
      // JOB_LOCK_MS stays at its default (30 s): a job the shutdown failed to hand back would sit
      // stalled that long, so the checks below on its state catch it instead of a quick takeover hiding it.
      LOG_LEVEL: 'info',
    });
    const first = await startWorkerProcess(env, procs);
    const baseline = await manualSync(api, importId);
    expect(await waitForRun(api, importId, baseline.run_id, 60_000)).toMatchObject({ status: 'SUCCEEDED', num_events_imported: ROWS });
    await changeEvTable(src, ROWS, AT);

    const { run_id } = await manualSync(api, importId);
    await until(async () => reached[moment]((await findRun(t.db, run_id))!), 60_000, 5);
    const { code, ms } = await terminate(first);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(first.output()).toMatch(/job handed back to the queue/);

    const paused = (await findRun(t.db, run_id))!;
    expect(paused.rowsSkipped).toBe(0);
    if (moment === 'read') expect(paused.rowsRead).toBeLessThan(AFTER.rowsRead);
    else {
      // The whole table was read; the sweep stopped part-way.
      expect(paused).toMatchObject({ rowsRead: AFTER.rowsRead, numImported: AFTER.imported, numUpdated: AFTER.updated });
      expect(paused.numDeleted).toBeLessThan(AFTER.deleted);
    }
    // The committed batches and their counts went together: the project holds the baseline with
    // exactly the changes counted so far.
    const urls = [...(await storedUrlsById(eventStoreOf(t.db), p.id)).values()];
    expect(urls.length).toBe(ROWS + paused.numImported - paused.numDeleted);
    expect(urls.filter((u) => u === 'changed').length).toBe(paused.numUpdated);
    return { api, importId, runId: run_id, paused, env, projectId: p.id };
  }

  /** A fresh worker process finishes the run: exact counts, and the project equals the table. */
  async function finishOnFreshWorker(r: Awaited<ReturnType<typeof sigtermMidMirrorRun>>) {
    const { t, procs } = w;
    const second = await startWorkerProcess(r.env, procs);
    const done = await waitForRun(r.api, r.importId, r.runId, 60_000);
    expect(done).toMatchObject({
      status: 'SUCCEEDED',
      rows_read: AFTER.rowsRead,
      num_events_imported: AFTER.imported,
      num_events_updated: AFTER.updated,
      num_events_deleted: AFTER.deleted,
      rows_skipped: 0,
      error: null,
    });
    expect(await differencesFromEvTable(eventStoreOf(t.db), r.projectId, ROWS, AT)).toEqual(NO_DIFFERENCES);
    expect(await countEvents(t.db, r.projectId)).toBe(AFTER.rowsRead);
    expect((await terminate(second)).code).toBe(0);
    return done;
  }

  it.each(['read', 'sweep'] as const)('unpartitioned, SIGTERM in the %s: the run goes back to QUEUED, its job waits unattempted, and a fresh worker ends exact', async (moment) => {
    const { app } = w;
    const r = await sigtermMidMirrorRun(ROWS * 2, moment);
    expect(r.paused).toMatchObject({ status: 'QUEUED', attempts: 1 });
    expect(r.paused.log.join('\n')).toContain(`interrupted after row ${r.paused.rowsRead} (worker shutting down); will resume`);
    const job = await app.queues.getJob('warehouse-sync', r.paused.jobId);
    expect(await job!.getState()).toBe('waiting');
    expect(job!.attemptsMade).toBe(0);

    const done = await finishOnFreshWorker(r);
    expect(done.attempts).toBe(2);
    expect(done.log.join('\n')).toContain(
      moment === 'read'
        ? `attempt 2 (job ${r.paused.jobId}): re-reading from the first row`
        : `attempt 2 (job ${r.paused.jobId}): the whole table was read; deleting what it no longer holds`,
    );
  }, 120_000);

  it.each(['read', 'sweep'] as const)('a flow of partitions, SIGTERM in the %s: no partition is left running, every job waits unattempted or is done, and a fresh worker ends exact', async (moment) => {
    const { t, app } = w;
    const r = await sigtermMidMirrorRun(ROWS / 4, moment);
    expect(r.paused.status).toBe('RUNNING');
    const parts = await listPartitions<unknown, { offset: number }>(t.db, 'sync', r.runId);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.filter((p) => p.status === 'running' || p.status === 'failed')).toEqual([]);
    // The run's read counts are the sum of its partitions' committed batches.
    expect(parts.reduce((s, p) => s + (p.counts.rowsRead ?? 0), 0)).toBe(r.paused.rowsRead);
    for (const p of parts) {
      const job = await app.queues.getJob('warehouse-sync-part', warehouseSyncPartJobId(r.runId, p.idx));
      // A done partition's job may also be back in `wait`: shutdown hands back a job whose handler returned after the abort.
      if (p.status === 'done') expect(['completed', 'waiting']).toContain(await job!.getState());
      else expect([await job!.getState(), job!.attemptsMade]).toEqual(['waiting', 0]);
    }
    const interrupted = /(partition \d+ of \d+) interrupted after row (\d+) \(worker shutting down\); will resume/.exec(r.paused.log.join('\n'));
    if (moment === 'read') expect(interrupted).not.toBeNull();
    else expect(parts.every((p) => p.status === 'done')).toBe(true);

    const done = await finishOnFreshWorker(r);
    expect(done.partitions).toEqual({ total: parts.length, done: parts.length });
    if (interrupted) expect(done.log.join('\n')).toMatch(new RegExp(`${interrupted[1]} \\(job [^)]*, attempt 2, worker [^)]*\\): re-reading its range from the first row`));
  }, 120_000);
});

/**
 * The setup of the tests that run worker (or scheduler) PROCESSES against an in-process app: one
 * test database and app per describe block, the processes each test starts (killed after it, so
 * the next test's jobs go to the next test's workers) and the warehouse sources put in `sources`
 * (removed at the end). `appOverrides` go to startTestApp (a Redis kind, an upload directory).
 * Call inside `describe`; read the fields inside tests, once the hooks have run.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startTestApp, type TestApp } from './app.js';
import type { Dialect } from '../../src/db/knex.js';
import { createTestDb, type TestDb } from './db.js';
import { serviceEnv, type Spawned } from './spawn.js';
import type { WarehouseSourceHandle } from './warehouse-sources.js';

export interface WorkerProcessesFixture {
  t: TestDb;
  app: TestApp;
  procs: Spawned[];
  sources: WarehouseSourceHandle[];
}

export function workerProcessesFixture(kind: Dialect, appOverrides: Parameters<typeof startTestApp>[1] = {}): WorkerProcessesFixture {
  const f = { procs: [], sources: [] } as unknown as WorkerProcessesFixture;
  beforeAll(async () => {
    f.t = await createTestDb(kind);
    f.app = await startTestApp(f.t.db, appOverrides);
  });
  afterEach(async () => {
    await Promise.all(f.procs.splice(0).map((p) => p.kill('SIGKILL')));
  });
  afterAll(async () => {
    for (const q of Object.values(f.app?.queues.queues ?? {})) await q.obliterate({ force: true });
    await f.app?.close();
    for (const s of f.sources) await s.cleanup();
    await f.t?.destroy();
  });
  return f;
}

/**
 * Worker settings of the Redis-loss tests: small batches keep a run going well past the loss,
 * and a lost lock is noticed within JOB_LOCK_MS / 2.
 */
export function redisLossWorkerEnv(f: WorkerProcessesFixture, partitionRows: number): Record<string, string> {
  return serviceEnv(f.t.url, f.app.config, {
    WAREHOUSE_BATCH_SIZE: '1000',
    WAREHOUSE_READER_THREAD: 'off',
    SYNC_PARTITION_ROWS: String(partitionRows),
    JOB_LOCK_MS: '2000',
    RECONCILE_INTERVAL_SEC: '1',
    WORKER_CONCURRENCY: '1',
    LOG_LEVEL: 'warn',
  });
}

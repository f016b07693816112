/**
 * Requests that write a run to SQL and then enqueue its job answer even while Redis is down:
 * the clients' commands wait for Redis forever (maxRetriesPerRequest null), so without a deadline
 * POST …/batch-imports and POST /migrate/amplitude never answered during an outage (a chaos
 * audit waited ten minutes) while the run sat in SQL — a client that retried created a second
 * run. Now they answer 202 after ENQUEUE_TIMEOUT_MS, and the reconciler enqueues the runs once
 * Redis is back: the batch import then stores every event once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSources } from '../../jobs/reconcile-sources.js';
import type { Db } from '../../src/db/knex.js';
import { silentLogger } from '../../src/lib/logger.js';
import { ENQUEUE_TIMEOUT_MS } from '../../src/queue/enqueue-deadline.js';
import { Reconciler } from '../../src/runs/reconciler.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { body, ndjsonEvents, startInProcessWorker, until } from '../helpers/job-platform.js';
import { countEvents } from '../helpers/events.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const REDIS = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

describe.each(dbKinds())('enqueueing while Redis is down, on %s', (kind) => {
  let t: TestDb;
  let db: Db;
  let proxy: TcpProxy;
  let app: TestApp;

  beforeAll(async () => {
    t = await createTestDb(kind);
    db = t.db;
    proxy = await startTcpProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    app = await startTestApp(db, { REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
  });
  afterAll(async () => {
    await proxy?.up();
    await app?.close();
    await proxy?.close();
    await t?.destroy();
  });

  it('a batch import and a migration answer 202, and run once Redis is back', async () => {
    const p = await seedProject(db);
    await proxy.down();
    const started = Date.now();
    const [imported, migrated] = await Promise.all([
      fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
        method: 'POST',
        headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
        body: body(ndjsonEvents(500)),
        signal: AbortSignal.timeout(ENQUEUE_TIMEOUT_MS * 4),
      }),
      fetch(`${app.url}/migrate/amplitude`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ SOURCE_TOOL_API_KEY: 'k', SOURCE_TOOL_API_SECRET: 's', SERVICE_TOKEN: p.token, START_DATE: '2024-01-01', END_DATE: '2024-01-02' }),
        signal: AbortSignal.timeout(ENQUEUE_TIMEOUT_MS * 4),
      }),
    ]);
    expect(imported.status).toBe(202);
    expect(migrated.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(ENQUEUE_TIMEOUT_MS - 100);
    const run = ((await imported.json()) as { results: { id: string; job_id: string } }).results;
    const migration = ((await migrated.json()) as { results: { migration_id: string; status: string } }).results;
    expect(migration.status).toBe('queued');

    await proxy.up();
    const reconciler = new Reconciler({ db, queues: app.queues, log: silentLogger, sources: reconcileSources, intervalMs: 0 });
    await until(async () => {
      await reconciler.runOnce();
      return (await app.queues.queues['batch-import'].getJob(run.job_id)) !== undefined;
    }, 20_000, 200);
    const days = await app.queues.queues.migration.getJobs(['waiting', 'delayed', 'active', 'prioritized']);
    expect(days.map((j) => (j.data as { migrationId: string }).migrationId)).toContain(migration.migration_id);

    const worker = await startInProcessWorker(db, app.config, { queueNames: ['batch-import'] });
    try {
      await until(async () => {
        const r = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/${run.id}`, { headers: { authorization: p.basic } });
        return ((await r.json()) as { results: { status: string } }).results.status === 'succeeded';
      }, 30_000, 100);
    } finally {
      await worker.close();
    }
    expect(await countEvents(db, p.id)).toBe(500);
  }, 60_000);
});

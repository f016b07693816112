/**
 * The one Redis connection factory on plain Redis and on a Redis Cluster (one suite): the key
 * layout (today's prefix on plain Redis; one hash slot per deployment on a cluster), /readyz,
 * /metrics queue depth and Bull Board's API on that connection, the reconciler's lock, and the
 * start-up probe's one-line error. On the cluster, REDIS_URL points at a listener that counts
 * connections: a batch import runs end to end through web, worker and reconciler and the
 * default Redis is never dialled.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSources } from '../../jobs/reconcile-sources.js';
import { findBatchImport } from '../../src/db/batch-imports.repo.js';
import { countEvents } from '../helpers/events.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import { Reconciler } from '../../src/runs/reconciler.js';
import { basicAuth, seedProject } from '../helpers/accounts.js';
import { startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { body, gzip, keysUnder, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';
import { redisKinds, redisOverrides, TEST_REDIS_CLUSTER_NODES, type RedisKind } from '../helpers/redis-kinds.js';

/** A TCP listener standing in for "the default Redis": it only counts who dials it. */
async function countingListener(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server = net.createServer((socket) => {
    n += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `redis://127.0.0.1:${port}`, connections: () => n, close: () => new Promise((r) => server.close(() => r())) };
}

describe.each(redisKinds())('queues on %s', (redisKind: RedisKind) => {
  let t: TestDb;
  let app: TestApp;
  let worker: InProcessWorker;
  let reconciler: Reconciler;
  let defaultRedis: Awaited<ReturnType<typeof countingListener>>;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-conn-uploads-'));
  const admin = basicAuth('operator', 'operator-password');

  beforeAll(async () => {
    defaultRedis = await countingListener();
    t = await createTestDb('sqlite');
    const overrides = redisOverrides(redisKind);
    app = await startTestApp(t.db, {
      ...overrides,
      // On the cluster, the "default Redis" is the counting listener: nothing may reach it.
      REDIS_URL: redisKind === 'cluster' ? defaultRedis.url : overrides.REDIS_URL,
      UPLOAD_DIR: uploads,
    });
    worker = await startInProcessWorker(t.db, app.config);
    reconciler = new Reconciler({ db: t.db, queues: worker.queues, log: silentLogger, sources: reconcileSources, intervalMs: 200 });
    reconciler.start();
  });
  afterAll(async () => {
    await reconciler?.stop();
    await worker?.close();
    for (const q of Object.values(app?.queues.queues ?? {})) await q.obliterate({ force: true });
    await app?.close();
    await t?.destroy();
    await defaultRedis?.close();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  it('runs a batch import end to end; every key of the deployment sits under its prefix (one slot on a cluster)', async () => {
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(gzip(ndjsonEvents(3000))),
    });
    expect(res.status).toBe(202);
    const { results } = (await res.json()) as { results: { id: string; job_id: string } };
    const run = await until(async () => {
      const r = (await findBatchImport(t.db, results.id))!;
      return r.status === 'succeeded' || r.status === 'failed' ? r : undefined;
    });
    expect(run).toMatchObject({ status: 'succeeded', imported: 3000 });
    expect(await countEvents(t.db, p.id)).toBe(3000);

    const prefix = app.queues.prefix;
    expect(prefix).toBe(redisKind === 'cluster' ? `{${app.config.QUEUE_PREFIX}}` : app.config.QUEUE_PREFIX);
    const keys = await keysUnder(app.queues.redis);
    expect(keys).toContain(`${prefix}:batch-import:${results.job_id}`);
    if (redisKind === 'cluster') {
      const slots = new Set(await Promise.all(keys.map((k) => app.queues.connection.cluster('KEYSLOT', k))));
      expect(slots.size).toBe(1);
      // The reconciler's lock shares the slot too (it is taken and released on every pass).
      expect(await app.queues.connection.cluster('KEYSLOT', `${prefix}:reconciler:lock`)).toBe([...slots][0]);
    }
  });

  it('answers /readyz, /metrics queue depth and Bull Board from the same connection', async () => {
    const ready = await fetch(`${app.url}/readyz`, { headers: { authorization: admin } });
    expect(await ready.json()).toEqual({ status: 'ok', checks: { database: 'ok', redis: 'ok' } });
    const metrics = await (await fetch(`${app.url}/metrics`, { headers: { authorization: admin } })).text();
    expect(metrics).toMatch(/queue_depth\{queue="batch-import",state="waiting"\} 0/);
    const board = (await (await fetch(`${app.url}/admin/queues/api/queues?activeQueue=batch-import&status=completed`, { headers: { authorization: admin } })).json()) as {
      queues: { name: string; counts: Record<string, number>; jobs: { name: string }[] }[];
    };
    const imports = board.queues.find((q) => q.name === 'batch-import')!;
    expect(imports.counts.completed).toBe(1);
    // The card's name says whose job it is (catalog name · project · batch import id).
    expect(imports.jobs.map((j) => j.name)).toEqual([expect.stringMatching(/^batch-import · project \d+ · batch import [\w-]+$/)]);
    const stats = await fetch(`${app.url}/admin/queues/api/redis/stats`, { headers: { authorization: admin } });
    expect(stats.status).toBe(200);
    expect(await stats.json()).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+/) });
  });

  // Only the cluster kind is given cluster nodes; on plain Redis REDIS_URL is the one to dial.
  it.runIf(redisKind === 'cluster')('never dials REDIS_URL when cluster nodes are given', () => {
    expect(defaultRedis.connections()).toBe(0);
  });
});

describe('the start-up probe', () => {
  it('names where Redis was looked for, without the password, in one line', async () => {
    const cluster = createRedisConnections(testConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:1,127.0.0.1:2', REDIS_PASSWORD: 'hunter2' }));
    await expect(cluster.assertReachable(1000)).rejects.toThrow(/^Redis is not reachable at REDIS_CLUSTER_NODES=127\.0\.0\.1:1,127\.0\.0\.1:2: /);
    const plain = createRedisConnections(testConfig({ REDIS_URL: 'redis://:hunter2@127.0.0.1:1' }));
    await expect(plain.assertReachable(1000)).rejects.toThrow(/^Redis is not reachable at REDIS_URL=redis:\/\/\*\*\*@127\.0\.0\.1:1: /);
    await expect(plain.assertReachable(1000)).rejects.not.toThrow(/hunter2/);
  });

  // Conditional: needs the Redis Cluster .ci/run starts (TEST_REDIS_CLUSTER_NODES), so CI always runs it.
  it.runIf(Boolean(TEST_REDIS_CLUSTER_NODES))('passes on the running cluster and pings every master', async () => {
    const r = createRedisConnections(testConfig(redisOverrides('cluster')));
    await r.assertReachable();
    await r.ping();
    expect(r.masters()).toHaveLength(3);
    await r.close();
  });
});

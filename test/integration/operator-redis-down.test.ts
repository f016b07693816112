/**
 * The operator surface while Redis is down (a private redis-server, stopped mid-test): /metrics
 * still answers within a couple of seconds with the process's own metrics, the Bull Board API
 * answers 503 instead of hanging, and the queues' Redis errors are single deduplicated log lines,
 * not BullMQ's console.error stacks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import { basicAuth } from '../helpers/accounts.js';
import { startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => (c.destroy(), resolve(true))).on('error', () => resolve(false));
    });
    if (up) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('redis-server did not start');
}

describe('operator surface while Redis is down', () => {
  let t: TestDb;
  let redis: ChildProcess | undefined;
  let app: TestApp;
  let redisUrl: string;
  const admin = basicAuth('operator', 'operator-password');

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    const port = await freePort();
    redisUrl = `redis://127.0.0.1:${port}`;
    redis = await startRedis(port);
    app = await startTestApp(t.db, { REDIS_URL: redisUrl });
    expect((await fetch(`${app.url}/metrics`, { headers: { authorization: admin } })).status).toBe(200);
    redis.kill('SIGKILL');
    await new Promise((r) => redis!.once('exit', r));
  });
  afterAll(async () => {
    redis?.kill('SIGKILL');
    app.queues.connection.disconnect();
    await Promise.race([app.close(), new Promise((r) => setTimeout(r, 2000))]);
    await t.destroy();
  });

  it('/metrics answers with the process metrics, the board API with 503', async () => {
    const started = Date.now();
    const metrics = await fetch(`${app.url}/metrics`, { headers: { authorization: admin }, signal: AbortSignal.timeout(10_000) });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/http_request_duration_seconds/);
    expect(Date.now() - started).toBeLessThan(4000);

    const board = await fetch(`${app.url}/admin/queues/api/queues`, { headers: { authorization: admin }, signal: AbortSignal.timeout(10_000) });
    expect(board.status).toBe(503);
    expect(await board.text()).toMatch(/Redis is not answering/);
    // The dashboard's page itself needs no Redis.
    expect((await fetch(`${app.url}/admin/queues`, { headers: { authorization: admin } })).status).toBe(200);
  });

  it("the queues' Redis errors are logged once per kind, never console.error'd", async () => {
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => {});
    const warned: { obj: Record<string, unknown>; msg: string }[] = [];
    const log = { warn: (obj: Record<string, unknown>, msg: string) => void warned.push({ obj, msg }) };
    const queues = new JobQueues(createRedisConnections(testConfig({ REDIS_URL: redisUrl })), log as never);
    try {
      await new Promise((r) => setTimeout(r, 2500)); // several reconnect attempts, each an error
      expect(consoleError).not.toHaveBeenCalled();
      expect(warned.length).toBeGreaterThan(0);
      const kinds = warned.map((w) => `${String(w.obj.queue)} ${String(w.obj.err)}`);
      expect(new Set(kinds).size).toBe(kinds.length);
      expect(warned[0]).toMatchObject({ msg: 'queue: Redis error', obj: { err: expect.stringMatching(/ECONNREFUSED/) } });
    } finally {
      consoleError.mockRestore();
      queues.connection.disconnect();
    }
  });
});

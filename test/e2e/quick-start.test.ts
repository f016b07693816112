/**
 * The README quick start, as a new user runs it: the all-in-one process on the embedded SQLite
 * default serves /healthz, and a missing Redis is reported in one clear line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin, type Spawned } from '../helpers/spawn.js';
import { TEST_REDIS_URL } from '../helpers/app.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quick-start-'));
const running: Spawned[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.kill('SIGKILL')));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('all-in-one start', () => {
  it('migrates the SQLite file, serves /healthz and /readyz, and stops cleanly on SIGTERM', async () => {
    const proc = spawnBin('all-in-one', {
      NODE_ENV: 'development',
      PORT: '0',
      DATABASE_URL: path.join(dir, 'data', 'analytics.sqlite'),
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `qs-${process.pid}`,
      LOG_LEVEL: 'warn',
    });
    running.push(proc);
    const [, url] = await proc.waitFor(/ready on (https?:\/\/localhost:\d+)/, 60_000);
    expect(fs.existsSync(path.join(dir, 'data', 'analytics.sqlite'))).toBe(true);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(await ready.json()).toMatchObject({ status: 'ok', checks: { database: 'ok', redis: 'ok' } });
    expect(await proc.kill('SIGTERM')).toBe(0);
  });

  it('says in one line how to fix an unreachable Redis, and exits non-zero', async () => {
    const proc = spawnBin('all-in-one', {
      PORT: '0',
      DATABASE_URL: path.join(dir, 'other.sqlite'),
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    running.push(proc);
    expect(await proc.exited).toBe(1);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/Redis is not reachable at REDIS_URL=redis:\/\/127\.0\.0\.1:1.*redis-server/);
  });
});

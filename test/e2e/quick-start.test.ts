/**
 * The README quick start, as a new user runs it: the all-in-one process on the embedded SQLite
 * default serves /healthz, and a missing Redis is reported in one clear line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/knex.js';
import { dropEventStore } from '../../src/store/clickhouse/clickhouse-migrate.js';
import { withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';
import { basicAuth, seedProject } from '../helpers/accounts.js';
import { spawnBin, type Spawned } from '../helpers/spawn.js';
import { TEST_REDIS_URL, TEST_SECRETS_KEY } from '../helpers/app.js';
import { createTestDb } from '../helpers/db.js';

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
      SECRETS_KEY: TEST_SECRETS_KEY,
    });
    running.push(proc);
    expect(await proc.exited).toBe(1);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/Redis is not reachable at REDIS_URL=redis:\/\/127\.0\.0\.1:1.*redis-server/);
  });
});

// Conditional: needs PostgreSQL; .ci/run starts one and sets TEST_DATABASE_URL.
describe.runIf(process.env.TEST_DATABASE_URL)('all-in-one start on PostgreSQL', () => {
  it('never prints the database password (the ready line names the database without it)', async () => {
    const t = await createTestDb('postgres');
    try {
      // The test server trusts local connections, so any password works: it only has to stay unprinted.
      const url = new URL(t.url);
      url.password = 'hunter2-not-for-logs';
      const proc = spawnBin('all-in-one', {
        NODE_ENV: 'development',
        PORT: '0',
        DATABASE_URL: url.toString(),
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: `qs-pg-${process.pid}`,
        LOG_LEVEL: 'info',
      });
      running.push(proc);
      const [line] = await proc.waitFor(/ready on .*\n/, 60_000);
      expect(line).toMatch(/\(database postgres:\/\/\*\*\*@127\.0\.0\.1/);
      expect(await proc.kill('SIGTERM')).toBe(0);
      expect(proc.output()).not.toContain('hunter2');
    } finally {
      await t.destroy();
    }
  });
});

// Conditional: needs a ClickHouse server; .ci/run starts one and sets TEST_CLICKHOUSE_URL, so CI always runs it.
describe.runIf(process.env.TEST_CLICKHOUSE_URL)('all-in-one start with EVENT_STORE_URL=clickhouse://', () => {
  const storeUrl = withDatabase(process.env.TEST_CLICKHOUSE_URL ?? 'clickhouse://x/', `test_qs_${process.pid}`);
  afterAll(() => dropEventStore({ EVENT_STORE_URL: storeUrl }));

  it('release creates the ClickHouse schema; /import, export and /readyz use it', async () => {
    const dbFile = path.join(dir, 'ch-meta.sqlite');
    const proc = spawnBin('all-in-one', {
      NODE_ENV: 'development',
      PORT: '0',
      DATABASE_URL: dbFile,
      EVENT_STORE_URL: storeUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `qs-ch-${process.pid}`,
      LOG_LEVEL: 'warn',
    });
    running.push(proc);
    const [, url] = await proc.waitFor(/ready on (https?:\/\/localhost:\d+)/, 60_000);
    const ready = await fetch(`${url}/readyz`);
    expect(await ready.json()).toMatchObject({ status: 'ok', checks: { database: 'ok', redis: 'ok', 'event store': 'ok' } });
    const db = createDb({ DATABASE_URL: dbFile });
    const p = await seedProject(db, { role: 'admin' });
    await db.destroy();
    const auth = basicAuth(p.sa.username, p.sa.secret);
    const events = [1, 2, 3].map((i) => ({ event: 'Played', properties: { time: 1_760_000_000 + i, distinct_id: `u${i}`, $insert_id: `qs-${i}` } }));
    for (let round = 0; round < 2; round++) {
      const res = await fetch(`${url}/import?project_id=${p.id}&strict=1`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(events) });
      expect(await res.json()).toEqual({ code: 200, num_records_imported: 3, status: 'OK' });
    }
    const exp = await fetch(`${url}/api/2.0/export?project_id=${p.id}&from_date=2025-10-01&to_date=2025-10-31`, { headers: { authorization: auth } });
    const lines = (await exp.text()).trim().split('\n').map((l) => JSON.parse(l) as { properties: { $insert_id: string } });
    expect(lines.map((l) => l.properties.$insert_id)).toEqual(['qs-1', 'qs-2', 'qs-3']);
    expect(await proc.kill('SIGTERM')).toBe(0);
  });
});

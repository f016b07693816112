/**
 * Our stores busy or hung rather than down:
 * - SQLite's write lock held past busy_timeout by another process (a worker's long job
 *   transaction, say): a write answers 503 with Retry-After in its surface's shape, never a 500,
 *   and the client's retry once the lock is free stores it;
 * - a dependency that accepts connections but never answers: /readyz answers 503 within its
 *   per-check bound instead of hanging.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

describe('busy and hung stores', () => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    p = await seedProject(t.db);
    app = await startTestApp(t.db, {}, { readiness: [{ name: 'event store', check: () => new Promise<void>(() => {}) }] });
  });

  afterAll(async () => {
    await app.close();
    await t.destroy();
  });

  const engage = (name: string) =>
    fetch(`${app.url}/engage?verbose=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ $token: p.token, $distinct_id: 'u1', $set: { name } }]),
    });

  it('a write meeting SQLite write lock held by another process past busy_timeout is a 503 to retry, then stored', async () => {
    const other = new Database(t.url);
    try {
      other.pragma('busy_timeout = 5000');
      other.prepare('BEGIN IMMEDIATE').run();
      const started = Date.now();
      const busy = await engage('first');
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('5');
      expect(await busy.json()).toEqual({ status: 0, error: expect.stringMatching(/database busy .*retry later/) });
      expect(Date.now() - started).toBeLessThan(15_000);
      other.prepare('ROLLBACK').run();
    } finally {
      other.close();
    }
    const retried = await engage('second');
    expect(retried.status).toBe(200);
    const profile = await t.db('profiles').where({ project_id: p.id, distinct_id: 'u1' }).first();
    expect(JSON.parse(profile.properties as string)).toMatchObject({ name: 'second' });
  }, 30_000);

  it('/readyz answers 503 within its per-check bound when a dependency never answers', async () => {
    const started = Date.now();
    const res = await fetch(`${app.url}/readyz`, { headers: { authorization: basicAuth('operator', 'operator-password') } });
    expect(res.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await res.json()).toEqual({ status: 'unavailable', checks: { database: 'ok', redis: 'ok', 'event store': 'timed out after 2000 ms' } });
  });
});

/**
 * The operator surface over HTTP: /admin/queues and /metrics need ADMIN_USERNAME/ADMIN_PASSWORD
 * (401 with a Basic challenge otherwise); without configured credentials they answer 503 unless
 * NODE_ENV=development; /healthz and /readyz stay open (/readyz names the failing dependency only to operators). /metrics carries the queue depth sampled
 * on scrape and the job counters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

describe('operator routes', () => {
  let t: TestDb;
  const apps: TestApp[] = [];
  const admin = basicAuth('operator', 'operator-password');

  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterAll(async () => {
    for (const a of apps) {
      for (const q of Object.values(a.queues.queues)) await q.obliterate({ force: true });
      await a.close();
    }
    await t.destroy();
  });
  const start = async (overrides: Parameters<typeof startTestApp>[1] = {}) => {
    const a = await startTestApp(t.db, overrides);
    apps.push(a);
    return a;
  };

  it('guards the board and /metrics with Basic auth and leaves health checks open', async () => {
    const app = await start();
    for (const p of ['/admin/queues', '/admin/queues/api/queues', '/metrics']) {
      const anon = await fetch(`${app.url}${p}`);
      expect(anon.status, p).toBe(401);
      expect(anon.headers.get('www-authenticate')).toMatch(/^Basic realm="operators"/);
      expect((await fetch(`${app.url}${p}`, { headers: { authorization: basicAuth('operator', 'wrong') } })).status).toBe(401);
      expect((await fetch(`${app.url}${p}`, { headers: { authorization: basicAuth('someone', 'operator-password') } })).status).toBe(401);
      expect((await fetch(`${app.url}${p}`, { headers: { authorization: admin } })).status, p).toBe(200);
    }
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    // Readiness for probes without credentials; which dependency failed, and why, for operators.
    const anonReady = await fetch(`${app.url}/readyz`);
    expect(anonReady.status).toBe(200);
    expect(await anonReady.json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${app.url}/readyz`, { headers: { authorization: basicAuth('operator', 'wrong') } })).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${app.url}/readyz`, { headers: { authorization: admin } })).json()).toEqual({ status: 'ok', checks: expect.objectContaining({ database: 'ok', redis: 'ok' }) });
    const api = (await (await fetch(`${app.url}/admin/queues/api/queues`, { headers: { authorization: admin } })).json()) as { queues: { name: string }[] };
    expect(api.queues.map((q) => q.name).sort()).toEqual(['batch-import', 'migration', 'warehouse-sync']);
  });

  it('samples the queue depth on scrape', async () => {
    const app = await start();
    await app.queues.enqueue('migration-finalize', { migrationId: 'x' }, { jobId: 'migration-finalize-x' });
    await app.queues.enqueue('migration-finalize', { migrationId: 'y' }, { jobId: 'migration-finalize-y', delayMs: 60_000 });
    const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: admin } })).text();
    expect(text).toMatch(/queue_depth\{queue="migration",state="waiting"\} 1/);
    expect(text).toMatch(/queue_depth\{queue="migration",state="delayed"\} 1/);
    expect(text).toMatch(/queue_depth\{queue="batch-import",state="waiting"\} 0/);
    expect(text).toMatch(/# TYPE jobs_total counter/);
    expect(text).toMatch(/http_request_duration_seconds/);
  });

  it('refuses to serve the operator surface without credentials outside development, and opens it in development', async () => {
    const locked = await start({ ADMIN_USERNAME: '', ADMIN_PASSWORD: '' });
    const res = await fetch(`${locked.url}/admin/queues`);
    expect(res.status).toBe(503);
    expect(await res.text()).toMatch(/ADMIN_USERNAME/);
    expect((await fetch(`${locked.url}/metrics`)).status).toBe(503);
    expect((await fetch(`${locked.url}/healthz`)).status).toBe(200);

    const dev = await start({ ADMIN_USERNAME: '', ADMIN_PASSWORD: '', NODE_ENV: 'development' });
    expect((await fetch(`${dev.url}/admin/queues`)).status).toBe(200);
  });
});

/**
 * The official `mixpanel` Node SDK as a real client over HTTPS: the test makes a self-signed
 * certificate, the web app serves TLS with it (TLS_CERT_FILE/TLS_KEY_FILE), and the SDK runs in
 * a child process that trusts it through NODE_EXTRA_CA_CERTS. Stored rows are then checked field
 * for field in the database (and through /api/2.0/export when that endpoint is mounted).
 */
import { execFile } from 'node:child_process';
import https from 'node:https';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageEvents } from '../helpers/events.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { TestDb } from '../helpers/db.js';
import { createStoreTestDb, storeKindNames } from '../helpers/store-kinds.js';
import { makeSelfSignedCert, type TestCert } from '../helpers/tls.js';

const run = promisify(execFile);
const SDK_VERSION = JSON.parse((await import('node:fs')).readFileSync('node_modules/mixpanel/package.json', 'utf8')).version as string;

function httpsGet(url: string, ca?: string, authorization?: string): Promise<{ status: number; body: string; encrypted: boolean }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, agent: false, headers: authorization ? { authorization } : {} }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, encrypted: Boolean((res.socket as { encrypted?: boolean }).encrypted) }));
      })
      .on('error', reject);
  });
}

describe.each(storeKindNames())('official mixpanel SDK over HTTPS on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let cert: TestCert;
  let p: SeededProject;
  let port: number;

  beforeAll(async () => {
    cert = makeSelfSignedCert();
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db, { TLS_CERT_FILE: cert.certFile, TLS_KEY_FILE: cert.keyFile });
    port = Number(new URL(app.url).port);
    p = await seedProject(t.db, { role: 'admin' });
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
    cert?.remove();
  });

  async function sdk(args: Record<string, unknown>): Promise<Record<string, string | null>> {
    const { stdout } = await run(process.execPath, ['test/fixtures/mixpanel-client.mjs', JSON.stringify({ host: '127.0.0.1', port, ...args })], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: cert.certFile, HTTPS_PROXY: '', HTTP_PROXY: '' },
      timeout: 30_000,
    });
    return JSON.parse(stdout.trim().split('\n').pop()!);
  }

  it('serves TLS with the given certificate, and clients that do not trust it are refused', async () => {
    expect(app.url.startsWith('https://')).toBe(true);
    const ok = await httpsGet(`${app.url}/healthz`, cert.cert);
    expect(ok).toEqual({ status: 200, body: '{"status":"ok"}', encrypted: true });
    await expect(httpsGet(`${app.url}/healthz`)).rejects.toThrow(/self[- ]signed|certificate/i);
  });

  it('import_batch with ServiceAccountCredentials, import and track: stored field for field', async () => {
    const base = Date.now() - 10 * 86_400_000; // older than the /track window: only /import takes these
    const events = Array.from({ length: 120 }, (_, i) => ({
      event: i % 2 ? 'Purchase' : 'Signup',
      properties: { time: base + i * 1000, distinct_id: `user-${i}`, $insert_id: `sdk-${i}`, amount: i * 1.5, plan: i % 3 ? 'pro' : 'free', tags: ['a', `t${i}`] },
    }));
    const trackTime = Date.now() - 60_000;
    const errors = await sdk({
      token: p.token,
      credentials: { username: p.sa.username, secret: p.sa.secret, projectId: p.id },
      steps: [
        { op: 'import_batch', name: 'batch', events },
        { op: 'import_batch', name: 'replay', events },
        { op: 'import', name: 'single', event: 'Legacy Import', time: base, properties: { distinct_id: 'solo', $insert_id: 'sdk-single', ok: true } },
        { op: 'track', name: 'track', event: 'App Open', properties: { distinct_id: 'tracker', time: trackTime, $insert_id: 'sdk-track', screen: 'home' } },
        { op: 'track', name: 'trackNoTime', event: 'Ping', properties: { distinct_id: 'tracker' } },
      ],
    });
    expect(errors).toEqual({ batch: null, replay: null, single: null, track: null, trackNoTime: null });

    const rows = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now() + 60_000, limit: 1000 });
    expect(rows).toHaveLength(123); // 120 once (the replay is deduplicated) + import + 2 tracks
    const byId = new Map(rows.map((r) => [r.insertId, r]));
    // The SDK adds mp_lib/$lib_version to single calls (import, track) but not to batches.
    const lib = { mp_lib: 'node', $lib_version: SDK_VERSION };
    for (const e of events) {
      const { time, distinct_id, $insert_id, ...rest } = e.properties;
      expect(byId.get($insert_id)).toEqual({ event: e.event, distinctId: distinct_id, time, insertId: $insert_id, properties: rest });
    }
    expect(byId.get('sdk-single')).toEqual({ event: 'Legacy Import', distinctId: 'solo', time: base, insertId: 'sdk-single', properties: { ok: true, ...lib } });
    expect(byId.get('sdk-track')).toEqual({ event: 'App Open', distinctId: 'tracker', time: trackTime, insertId: 'sdk-track', properties: { screen: 'home', ...lib } });
    const ping = rows.find((r) => r.event === 'Ping')!;
    expect(ping.distinctId).toBe('tracker');
    expect(Date.now() - ping.time).toBeLessThan(60_000);
    // The token the SDK puts in every record authenticates; it is not stored as a property.
    for (const r of rows) expect(r.properties).not.toHaveProperty('token');

    // Through the read-back API too, when it is mounted in this tree (built in parallel).
    const from = new Date(base - 86_400_000).toISOString().slice(0, 10);
    const to = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const exp = await httpsGet(`${app.url}/api/2.0/export?project_id=${p.id}&from_date=${from}&to_date=${to}`, cert.cert, p.basic);
    if (exp.status !== 404) {
      expect(exp.status).toBe(200);
      const lines = exp.body.trim().split('\n').map((l) => JSON.parse(l) as { event: string; properties: Record<string, unknown> });
      expect(lines).toHaveLength(123);
      for (const e of events) {
        const line = lines.find((l) => l.properties.$insert_id === e.properties.$insert_id)!;
        const t = line.properties.time as number;
        // Seconds (possibly fractional, as Mixpanel's export) or milliseconds: the same instant.
        expect(Math.round(t < 1e11 ? t * 1000 : t)).toBe(e.properties.time);
        expect({ ...line.properties, time: undefined }).toEqual({ ...e.properties, time: undefined });
        expect(line.event).toBe(e.event);
      }
    }
  });

  it('verbose mode and the project API secret (the SDK\'s deprecated `secret` option) work too', async () => {
    const q = await seedProject(t.db);
    const errors = await sdk({
      token: q.token,
      secret: q.api_secret,
      verbose: true,
      steps: [
        { op: 'import_batch', name: 'batch', events: [{ event: 'S', properties: { time: Date.now() - 1000, distinct_id: 'x', $insert_id: 'sec-1' } }] },
        { op: 'track', name: 'track', event: 'T', properties: { distinct_id: 'x' } },
      ],
    });
    expect(errors).toEqual({ batch: null, track: null });
    const rows = await pageEvents(t.db, { projectId: q.id, fromMs: 0, toMs: Date.now() + 60_000, limit: 10 });
    expect(rows.map((r) => r.event).sort()).toEqual(['S', 'T']);
  });

  it('the SDK surfaces refusals as errors: wrong secret, another project', async () => {
    const other = await seedProject(t.db);
    const errors = await sdk({
      token: p.token,
      verbose: true,
      credentials: { username: p.sa.username, secret: 'wrong', projectId: p.id },
      steps: [{ op: 'import_batch', name: 'wrong', events: [{ event: 'x', properties: { time: Date.now(), distinct_id: 'u' } }] }],
    });
    expect(errors.wrong).toMatch(/Invalid credentials/);
    const cross = await sdk({
      token: other.token,
      credentials: { username: p.sa.username, secret: p.sa.secret, projectId: other.id },
      steps: [{ op: 'import_batch', name: 'cross', events: [{ event: 'x', properties: { time: Date.now(), distinct_id: 'u' } }] }],
    });
    expect(cross.cross).toMatch(/Mixpanel Server Error/);
    expect(await pageEvents(t.db, { projectId: other.id, fromMs: 0, toMs: Date.now() + 60_000, limit: 10 })).toEqual([]);
  });
});

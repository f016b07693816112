/**
 * CORS on the client-SDK surfaces (CONTRACT §2.2): every path mixpanel-browser calls echoes the
 * Origin with credentials and `Vary: Origin`, preflights answer 204 with the methods and the
 * requested headers, errors carry the headers too; the app, operator, migration and /import
 * surfaces carry none. Also the sendBeacon body (`data=` labelled text/plain) and the answers
 * for /flags, /settings, /decide and /record. The HTTP layer does not depend on the database
 * kind, so this runs on SQLite only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

const ORIGIN = 'http://127.0.0.1:5173';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe('CORS for client SDKs', () => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db);
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const sdkPaths = ['/track', '/track/', '/engage/', '/groups/', '/flags/', '/settings/', '/record/', '/decide'];

  it.each(sdkPaths)('preflight %s → 204 echoing origin, credentials, methods and requested headers', async (path) => {
    const res = await fetch(`${app.url}${path}?verbose=1`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,traceparent,content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization,traceparent,content-type');
    expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
  });

  it('a preflight without requested headers, or with a malformed list, allows the default ones', async () => {
    for (const extra of [{}, { 'access-control-request-headers': 'x-a\r\nx-b' }]) {
      const res = await fetch(`${app.url}/engage`, {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST', ...(extra as Record<string, string>) },
      }).catch(() => undefined);
      // fetch itself refuses a header value with CR/LF; the server side of that case is the same branch.
      if (!res) continue;
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type, Content-Encoding, Authorization');
    }
  });

  it('answers and errors of /track, /engage, /groups carry the credentialed CORS headers', async () => {
    const cases: [string, RequestInit, number, string][] = [
      ['/track/?verbose=1&ip=1', form([{ event: 'e', properties: { token: p.token, distinct_id: 'd', time: Date.now() } }]), 200, '{"status":1,"error":null}'],
      ['/track/', form([{ event: 'e', properties: { token: 'nope', distinct_id: 'd', time: Date.now() } }]), 401, '0'],
      ['/engage/?verbose=1', form([{ $token: p.token, $distinct_id: 'd', $set: { a: 1 } }]), 200, '{"status":1,"error":null}'],
      ['/groups/', form([{ $token: p.token, $group_key: 'company', $group_id: 'c1', $set: { n: 1 } }]), 200, '1'],
      ['/groups/', { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' }, body: '[' }, 400, '0'],
    ];
    for (const [path, init, status, text] of cases) {
      const res = await fetch(`${app.url}${path}`, init);
      expect({ path, status: res.status, text: await res.text() }).toEqual({ path, status, text });
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
    }
  });

  it('without an Origin there is no Allow-Origin, but still Vary: Origin', async () => {
    const res = await fetch(`${app.url}/track?data=${encodeURIComponent(b64({ event: 'e', properties: { token: p.token, distinct_id: 'd' } }))}`);
    expect(await res.text()).toBe('1');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
  });

  it('a sendBeacon body (data= labelled text/plain) is the SDK form, in base64 and in JSON', async () => {
    const q = await seedProject(t.db);
    const rec = (id: string) => [{ event: 'beacon', properties: { token: q.token, distinct_id: 'd', time: Date.now(), $insert_id: id } }];
    for (const body of [`data=${encodeURIComponent(b64(rec('b1')))}`, `data=${encodeURIComponent(JSON.stringify(rec('b2')))}`]) {
      const res = await fetch(`${app.url}/track/?ip=1&_=1`, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain;charset=UTF-8' }, body });
      expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: '1' });
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    }
    expect(await countEvents(t.db, q.id)).toBe(2);
  });

  it('/flags, /settings and /decide answer "nothing configured"; /record says replays are not stored', async () => {
    const auth = { origin: ORIGIN, authorization: basicAuth(p.token) };
    const flags = await fetch(`${app.url}/flags/?context=%7B%7D&token=${p.token}&mp_lib=web`, { headers: auth });
    expect(flags.status).toBe(200);
    expect(await flags.json()).toEqual({ flags: {} });
    expect(flags.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const settings = await fetch(`${app.url}/settings/?mp_lib=web&sdk_config=1`, { headers: auth });
    expect(await settings.json()).toEqual({ sdk_config: { config: {} } });
    const decide = await fetch(`${app.url}/decide?token=${p.token}`, { headers: { origin: ORIGIN } });
    expect(await decide.json()).toMatchObject({ notifications: [], feature_flags: [] });
    const record = await fetch(`${app.url}/record/?format=body`, { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: 'x' });
    expect(record.status).toBe(501);
    expect(await record.json()).toMatchObject({ code: 501, error: expect.stringContaining('session replay is not supported') });
    expect(record.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    for (const bad of [{ origin: ORIGIN }, { origin: ORIGIN, authorization: basicAuth('not-a-token') }] as Record<string, string>[]) {
      const res = await fetch(`${app.url}/flags/`, { headers: bad });
      expect(res.status).toBe(401);
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    }
  });

  it('app, operator, migration and /import surfaces carry no CORS headers', async () => {
    const paths: [string, RequestInit][] = [
      [`/api/app/projects/${p.id}/insights?from_date=2026-01-01&to_date=2026-01-02`, { headers: { origin: ORIGIN, authorization: p.basic } }],
      [`/api/2.0/export?project_id=${p.id}&from_date=2026-01-01&to_date=2026-01-02`, { headers: { origin: ORIGIN, authorization: p.basic } }],
      ['/admin/queues', { headers: { origin: ORIGIN } }],
      ['/metrics', { headers: { origin: ORIGIN } }],
      ['/migrate/amplitude', { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' }, body: '{}' }],
      [`/import?project_id=${p.id}`, { method: 'POST', headers: { origin: ORIGIN, authorization: p.basic, 'content-type': 'application/json' }, body: '[]' }],
    ];
    for (const [path, init] of paths) {
      for (const method of [init.method ?? 'GET', 'OPTIONS']) {
        const res = await fetch(`${app.url}${path}`, method === 'OPTIONS' ? { method, headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } } : init);
        await res.arrayBuffer();
        expect({ path, method, acao: res.headers.get('access-control-allow-origin'), acac: res.headers.get('access-control-allow-credentials') }).toEqual({
          path,
          method,
          acao: null,
          acac: null,
        });
      }
    }
  });

  function form(records: unknown[]): RequestInit {
    return { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' }, body: `data=${encodeURIComponent(b64(records))}` };
  }
});

/** GET|POST /track over HTTP: token authentication, legacy answers, the 5-day window, defaults. */
import { MAX_HEADER_BYTES } from '../../src/http/client-error.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents } from '../helpers/events.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const DAY = 86_400_000;

describe.each(dbKinds())('/track over HTTP on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db);
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const get = async (data: unknown, q = '') => {
    const res = await fetch(`${app.url}/track?data=${encodeURIComponent(b64(data))}${q}`);
    return { status: res.status, text: await res.text() };
  };
  const stored = () => pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now() + DAY, limit: 100 });

  it('GET ?data= with the token in properties stores the event and answers 1', async () => {
    const time = Date.now() - 1000;
    const r = await get({ event: 'page view', properties: { token: p.token, distinct_id: 'u1', time, page: '/home', $insert_id: 'trk-1' } });
    expect(r).toEqual({ status: 200, text: '1' });
    const preflight = await fetch(`${app.url}/track`, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const rows = await stored();
    expect(rows).toEqual([{ event: 'page view', distinctId: 'u1', time, insertId: 'trk-1', properties: { page: '/home' } }]);
    const usage = await t.db('usage').where({ project_id: p.id });
    expect(usage.map((u) => u.source)).toEqual(['track']);
  });

  it('POST form and JSON bodies; time defaults to receipt, distinct_id to empty', async () => {
    const before = Date.now();
    const form = await fetch(`${app.url}/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `data=${b64([{ event: 'no-time', properties: { token: p.token, distinct_id: 'u2' } }])}`,
    });
    expect(await form.text()).toBe('1');
    const json = await fetch(`${app.url}/track?verbose=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ event: 'anon', properties: { token: p.token, time: Date.now() } }]),
    });
    expect(await json.json()).toEqual({ status: 1, error: null });
    const rows = await stored();
    const noTime = rows.find((e) => e.event === 'no-time')!;
    expect(noTime.time).toBeGreaterThanOrEqual(before);
    expect(noTime.time).toBeLessThanOrEqual(Date.now());
    expect(rows.find((e) => e.event === 'anon')!.distinctId).toBe('');
  });

  it('refuses events older than 5 days (0, or verbose {status:0,error}) and stores the rest', async () => {
    const q = await seedProject(t.db);
    const old = { event: 'old', properties: { token: q.token, distinct_id: 'u', time: Date.now() - 6 * DAY } };
    const fresh = { event: 'fresh', properties: { token: q.token, distinct_id: 'u', time: Date.now() - 4 * DAY } };
    expect(await get(old)).toEqual({ status: 400, text: '0' });
    const v = await get([old, fresh], '&verbose=1');
    expect(v.status).toBe(400);
    expect(JSON.parse(v.text)).toMatchObject({
      status: 0,
      error: expect.stringContaining('older than 5 days'),
      num_records_imported: 1,
      failed_records: [{ index: 0, field: 'properties.time' }],
    });
    expect(await countEvents(t.db, q.id)).toBe(1);
  });

  it('img=1 answers a 1×1 GIF; callback= answers JavaScript calling it with the answer, always 200; a callback that is no name is a 400', async () => {
    const q = await seedProject(t.db);
    const ev = (id: string, time = Date.now() - 1000) => ({ event: 'pixel', properties: { token: q.token, distinct_id: 'u', time, $insert_id: id } });
    const pixel = await fetch(`${app.url}/track?data=${encodeURIComponent(b64(ev('img-1')))}&img=1`);
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get('content-type')).toBe('image/gif');
    expect(pixel.headers.get('cache-control')).toContain('no-store');
    const gif = Buffer.from(await pixel.arrayBuffer());
    expect(gif.subarray(0, 6).toString('latin1')).toBe('GIF89a');
    expect([gif.readUInt16LE(6), gif.readUInt16LE(8)]).toEqual([1, 1]);

    // What mixpanel-browser's JSONP transport sends, plain and verbose; a refusal reaches the callback as 0.
    const jsonp = async (data: unknown, q2: string) => {
      const res = await fetch(`${app.url}/track?data=${encodeURIComponent(b64(data))}${q2}`);
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    };
    expect(await jsonp(ev('cb-1'), '&callback=mixpanel._jsc%5B41234567%5D')).toEqual({ status: 200, type: 'application/javascript; charset=utf-8', text: 'mixpanel._jsc[41234567](1);' });
    expect((await jsonp(ev('cb-2'), '&verbose=1&callback=(function()%7B%7D)')).text).toBe('(function(){})({"status":1,"error":null});');
    const old = await jsonp(ev('cb-3', Date.now() - 6 * DAY), '&verbose=1&callback=cb');
    expect(old.status).toBe(200);
    expect(old.text).toMatch(/^cb\(\{"status":0,"error":"1 record\(s\) failed validation/);
    // Errors before the records too (an unknown token): the callback hears 0.
    expect(await jsonp({ event: 'x', properties: { token: 'nope', distinct_id: 'u', time: Date.now() } }, '&callback=cb')).toMatchObject({ status: 200, text: 'cb(0);' });

    // /engage answers the same way (one answer for every legacy SDK form).
    const engage = await fetch(`${app.url}/engage?data=${encodeURIComponent(b64({ $token: q.token, $distinct_id: 'u', $set: { plan: 'pro' } }))}&callback=cb`);
    expect([engage.status, await engage.text()]).toEqual([200, 'cb(1);']);

    const hostile = await jsonp(ev('cb-4'), `&callback=${encodeURIComponent('alert(document.cookie)//')}`);
    expect(hostile).toMatchObject({ status: 400, text: '0' });
    const rows = await pageEvents(t.db, { projectId: q.id, fromMs: 0, toMs: Date.now() + DAY, limit: 100 });
    expect(rows.map((r) => r.insertId).sort()).toEqual(['cb-1', 'cb-2', 'img-1']);
  });

  it('GET ?data= carries events far larger than 16 KB; a URL over the header limit is a 431 that says so', async () => {
    // What the official Node SDK sends for one track() with ~300 KB of properties.
    const blob = 'x'.repeat(300_000);
    const big = await get({ event: 'big', properties: { token: p.token, distinct_id: 'u-big', time: Date.now() - 1000, blob, $insert_id: 'trk-big' } }, '&verbose=1');
    expect(big).toEqual({ status: 200, text: JSON.stringify({ status: 1, error: null }) });
    expect((await stored()).find((e) => e.insertId === 'trk-big')?.properties.blob).toBe(blob);
    const tooLong = await fetch(`${app.url}/track?data=${'A'.repeat(MAX_HEADER_BYTES + 1024)}`);
    expect(tooLong.status).toBe(431);
    expect(await tooLong.json()).toEqual({ code: 431, error: expect.stringMatching(/exceed 2 MiB: send large payloads in a POST body/), status: 'Request Header Fields Too Large' });
    // The server is still there for the next request.
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
  });

  it('401 for a missing or unknown token; 400 for mixed tokens; malformed data is 400 "0"', async () => {
    expect(await get({ event: 'x', properties: { distinct_id: 'u' } })).toEqual({ status: 401, text: '0' });
    const unknown = await get({ event: 'x', properties: { token: 'nope', distinct_id: 'u' } }, '&verbose=1');
    expect(unknown.status).toBe(401);
    expect(JSON.parse(unknown.text)).toEqual({ status: 0, error: 'Invalid token' });
    const other = await seedProject(t.db);
    const mixed = await get([
      { event: 'x', properties: { token: p.token, distinct_id: 'u' } },
      { event: 'x', properties: { token: other.token, distinct_id: 'u' } },
    ]);
    expect(mixed).toEqual({ status: 400, text: '0' });
    expect(await countEvents(t.db, other.id)).toBe(0);
    // Without credentials a record with no token is not stored in the project another record names.
    const before = await countEvents(t.db, other.id);
    const tokenless = await get(
      [
        { event: 'x', properties: { token: other.token, distinct_id: 'u', $insert_id: 'with-token' } },
        { event: 'x', properties: { distinct_id: 'u', $insert_id: 'without-token' } },
      ],
      '&verbose=1',
    );
    expect(tokenless.status).toBe(400);
    expect(JSON.parse(tokenless.text)).toEqual({ status: 0, error: expect.stringMatching(/record 1 carries no 'token'/) });
    expect(await countEvents(t.db, other.id)).toBe(before);
    const bad = await fetch(`${app.url}/track?data=!!!&verbose=1`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ status: 0, error: expect.stringContaining('base64') });
    const csv = await fetch(`${app.url}/track`, { method: 'POST', headers: { 'content-type': 'text/csv' }, body: 'a,b' });
    expect([csv.status, await csv.text()]).toEqual([415, '0']);
  });

  it('a NUL in a token or a Basic username is a 401 like any unknown credential, not a 500', async () => {
    const token = await get({ event: 'x', properties: { token: 'to\u0000ken', distinct_id: 'u' } }, '&verbose=1');
    expect([token.status, JSON.parse(token.text)]).toEqual([401, { status: 0, error: 'Invalid token' }]);
    const engage = await fetch(`${app.url}/engage?verbose=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ $token: '\u0000', $distinct_id: 'u', $set: { a: 1 } }]),
    });
    expect(engage.status).toBe(401);
    expect((await fetch(`${app.url}/decide?token=%00`)).status).toBe(401);
    const user = await fetch(`${app.url}/track?verbose=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuth('sa\u0000', 'secret') },
      body: JSON.stringify([{ event: 'x', properties: { distinct_id: 'u' } }]),
    });
    expect(user.status).toBe(401);
    expect(await countEvents(t.db, p.id)).toBe((await stored()).length);
  });

  it('accepts the project secret as Basic auth; a token of another project is 403', async () => {
    const q = await seedProject(t.db);
    const body = (token?: string) =>
      `data=${b64([{ event: 'srv', properties: { distinct_id: 'u', time: Date.now(), ...(token ? { token } : {}) } }])}`;
    const ok = await fetch(`${app.url}/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuth(q.api_secret) },
      body: body(),
    });
    expect(await ok.text()).toBe('1');
    const wrong = await fetch(`${app.url}/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuth(q.api_secret) },
      body: body(p.token),
    });
    expect(wrong.status).toBe(403);
    expect(await countEvents(t.db, q.id)).toBe(1);
  });

  it('refuses a token of a project with another residency with 400', async () => {
    const eu = await seedProject(t.db, { residency: 'EU' });
    const r = await get({ event: 'x', properties: { token: eu.token, distinct_id: 'u' } }, '&verbose=1');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toContain('EU');
    expect(await countEvents(t.db, eu.id)).toBe(0);
  });
});

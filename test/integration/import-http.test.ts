/**
 * POST|GET /import over HTTP against the real app: every status and body of CONTRACT §2.1, all
 * payload forms, limits (incl. a gzip bomb), auth, residency, dedupe on replay, project isolation.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents } from '../helpers/events.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { TestDb } from '../helpers/db.js';
import { createStoreTestDb, storeKindNames } from '../helpers/store-kinds.js';

const NOW_S = Math.floor(Date.now() / 1000);

function ev(i: number, extra: Record<string, unknown> = {}) {
  return { event: `e${i % 3}`, properties: { time: NOW_S - 3600 - i, distinct_id: `u${i}`, $insert_id: `id-${i}`, n: i, ...extra } };
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe.each(storeKindNames())('/import over HTTP on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db);
    p = await seedProject(t.db, { role: 'admin' });
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  async function post(path: string, body: BodyInit, headers: Record<string, string> = {}, auth: string | null = p.basic) {
    const res = await fetch(`${app.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}), ...headers },
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json: json as any, headers: res.headers };
  }
  const imp = (q = '') => `/import?project_id=${p.id}${q}`;

  it('200 for a JSON array: exact body, stored field for field', async () => {
    const r = await post(imp(), JSON.stringify([ev(1), ev(2, { nested: { a: [1, 2] } })]));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ code: 200, num_records_imported: 2, status: 'OK' });
    const rows = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now() + 1, limit: 10 });
    // In time order: e2 happened first.
    expect(rows).toEqual([
      { event: 'e2', distinctId: 'u2', time: (NOW_S - 3602) * 1000, insertId: 'id-2', properties: { n: 2, nested: { a: [1, 2] } } },
      { event: 'e1', distinctId: 'u1', time: (NOW_S - 3601) * 1000, insertId: 'id-1', properties: { n: 1 } },
    ]);
  });

  it('accepts one JSON object as one record, NDJSON, and gzip', async () => {
    expect((await post(imp(), JSON.stringify(ev(10)))).json).toEqual({ code: 200, num_records_imported: 1, status: 'OK' });
    const nd = [ev(11), ev(12)].map((e) => JSON.stringify(e)).join('\n') + '\n\n';
    expect((await post(imp(), nd, { 'content-type': 'application/x-ndjson' })).json).toMatchObject({ num_records_imported: 2 });
    const gz = zlib.gzipSync(JSON.stringify([ev(13), ev(14), ev(15)]));
    const r = await post(imp(), gz, { 'content-encoding': 'gzip' });
    expect(r.json).toEqual({ code: 200, num_records_imported: 3, status: 'OK' });
    const ndgz = zlib.gzipSync([ev(16)].map((e) => JSON.stringify(e)).join('\n'));
    expect((await post(imp(), ndgz, { 'content-encoding': 'gzip', 'content-type': 'application/x-ndjson' })).status).toBe(200);
    const stored = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now() + 1, limit: 100 });
    expect(stored.map((e) => e.insertId)).toEqual(expect.arrayContaining(['id-10', 'id-11', 'id-12', 'id-13', 'id-14', 'id-15', 'id-16']));
  });

  it('legacy SDK forms: form POST data=<base64> and GET ?data= answer 1, verbose {status:1,error:null}', async () => {
    // Un-encoded base64 in a form body (as the SDK sends it): '+' must survive.
    const records = [ev(20, { s: '>>>???' }), ev(21)];
    const form = await post(imp(), `data=${b64(records)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(200);
    expect(form.text).toBe('1');
    const plain = await post(imp('&verbose=1'), `data=${encodeURIComponent(JSON.stringify([ev(22)]))}`, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(plain.json).toEqual({ status: 1, error: null });
    const get = await fetch(`${app.url}${imp()}&data=${encodeURIComponent(b64(ev(23)))}`, { headers: { authorization: p.basic } });
    expect(get.status).toBe(200);
    expect(await get.text()).toBe('1');
    const rows = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now() + 1, limit: 100 });
    expect(rows.find((e) => e.insertId === 'id-20')?.properties).toEqual({ n: 20, s: '>>>???' });
    expect(rows.map((e) => e.insertId)).toEqual(expect.arrayContaining(['id-21', 'id-22', 'id-23']));
  });

  it('strict: 400 with failed_records, and the valid records are still imported', async () => {
    const q = await seedProject(t.db);
    const records = [
      ev(30),
      { event: 'x', properties: { time: 'yesterday', distinct_id: 'u', $insert_id: 'bad-time' } },
      ev(31),
      { event: 'y', properties: { time: NOW_S, distinct_id: 'u', $insert_id: 'not valid!' } },
      { event: 'z', properties: { time: Date.now() + 3 * 3600_000, distinct_id: 'u' } },
      { properties: { time: NOW_S, distinct_id: 'u' } },
      'not an object',
    ];
    const r = await post(`/import?project_id=${q.id}&strict=1`, JSON.stringify(records), {}, q.basic);
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      code: 400,
      error: 'some data points in the request failed validation',
      status: 'Bad Request',
      num_records_imported: 2,
      failed_records: [
        { index: 1, $insert_id: 'bad-time', field: 'properties.time', message: expect.any(String) },
        { index: 3, $insert_id: 'not valid!', field: 'properties.$insert_id', message: expect.stringContaining('36') },
        { index: 4, field: 'properties.time', message: expect.stringContaining('future') },
        { index: 5, field: 'event', message: expect.any(String) },
        { index: 6, field: '', message: 'record must be a JSON object' },
      ],
    });
    expect(await countEvents(t.db, q.id)).toBe(2);
  });

  it('non-strict: invalid records dropped and counted, valid ones stored', async () => {
    const q = await seedProject(t.db);
    const records = [ev(40), { event: 'x', properties: { distinct_id: 'u' } }, ev(41)];
    const r = await post(`/import?project_id=${q.id}`, JSON.stringify(records), {}, q.basic);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ code: 200, num_records_imported: 2, status: 'OK' });
    expect(r.headers.get('x-records-rejected')).toBe('1');
    expect(await countEvents(t.db, q.id)).toBe(2);
  });

  it('legacy strict failure answers 0, or {status:0,error,...} with verbose', async () => {
    const bad = [{ event: 'x', properties: { distinct_id: 'u' } }];
    const r = await post(imp('&strict=1'), `data=${b64(bad)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect([r.status, r.text]).toEqual([400, '0']);
    const v = await post(imp('&strict=1&verbose=1'), `data=${b64(bad)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(v.status).toBe(400);
    expect(v.json).toMatchObject({ status: 0, error: expect.stringContaining('properties.time'), num_records_imported: 0 });
    const badB64 = await post(imp('&verbose=1'), 'data=%%%not-base64', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(badB64.status).toBe(400);
    expect(badB64.json).toEqual({ status: 0, error: expect.stringContaining('base64') });
    const noData = await fetch(`${app.url}${imp()}`, { headers: { authorization: p.basic } });
    expect([noData.status, await noData.text()]).toEqual([400, '0']);
  });

  it('400 for malformed bodies, wrong payload types and too many records, in the {code,error,status} shape', async () => {
    const badJson = await post(imp(), '[{"event":');
    expect(badJson.status).toBe(400);
    expect(badJson.json).toEqual({ code: 400, error: expect.stringContaining('not valid JSON'), status: 'Bad Request' });
    for (const body of ['42', '"text"', 'null', '']) {
      const r = await post(imp(), body);
      expect(r.status, body).toBe(400);
      expect(r.json.code).toBe(400);
    }
    const badNd = await post(imp(), `${JSON.stringify(ev(1))}\n{oops\n`, { 'content-type': 'application/x-ndjson' });
    expect(badNd.json).toEqual({ code: 400, error: expect.stringContaining('line 2'), status: 'Bad Request' });
    const tooMany = Array.from({ length: 2001 }, (_, i) => ev(i));
    const r = await post(imp(), JSON.stringify(tooMany));
    expect(r.status).toBe(400);
    expect(r.json.error).toContain('2001');
    const badId = await post('/import?project_id=abc', '[]');
    expect(badId.json).toEqual({ code: 400, error: expect.stringContaining('project_id'), status: 'Bad Request' });
    const truncated = zlib.gzipSync(JSON.stringify([ev(1), ev(2)])).subarray(0, 20);
    const tr = await post(imp(), truncated, { 'content-encoding': 'gzip' });
    expect(tr.status).toBe(400);
    expect(tr.json).toEqual({ code: 400, error: expect.stringContaining('gzip'), status: 'Bad Request' });
    const before = await countEvents(t.db, p.id);
    const notGzip = await post(imp(), JSON.stringify([ev(99)]), { 'content-encoding': 'gzip' });
    expect(notGzip.status).toBe(400);
    expect(await countEvents(t.db, p.id)).toBe(before);
  });

  it('413 for an 11 MB body and for a gzip bomb, without buffering the bomb', async () => {
    const big = JSON.stringify([{ event: 'big', properties: { time: NOW_S, distinct_id: 'u', pad: 'x'.repeat(11 * 1024 * 1024) } }]);
    const r = await post(imp(), big);
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ code: 413, error: 'Request Entity Too Large', status: 'Payload Too Large' });

    // ~200 KB of gzip inflating to 200 MB of JSON-ish text.
    const gz = zlib.createGzip({ level: 9 });
    const chunks: Buffer[] = [];
    gz.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise((resolve) => gz.on('end', resolve));
    gz.write('[{"event":"bomb","properties":{"pad":"');
    const mb = Buffer.alloc(1024 * 1024, 'a');
    for (let i = 0; i < 200; i++) gz.write(mb);
    gz.end('"}}]');
    await done;
    const bomb = Buffer.concat(chunks);
    expect(bomb.length).toBeLessThan(300 * 1024);
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    const b = await post(imp(), bomb, { 'content-encoding': 'gzip' });
    expect(b.status).toBe(413);
    expect(b.json).toEqual({ code: 413, error: 'Request Entity Too Large', status: 'Payload Too Large' });
    // Inflating all 200 MB would take seconds and show in RSS; the limit cuts it off at 10 MB.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    expect(await countEvents(t.db, p.id)).toBeGreaterThan(0); // the app still answers and serves
    expect((await post(imp(), JSON.stringify([ev(50)]))).status).toBe(200);
  });

  it('415 for an unsupported Content-Type or Content-Encoding', async () => {
    const csv = await post(imp(), 'a,b\n1,2', { 'content-type': 'text/csv' });
    expect(csv.status).toBe(415);
    expect(csv.json).toEqual({ code: 415, error: expect.stringContaining('text/csv'), status: 'Unsupported Media Type' });
    const br = await post(imp(), '[]', { 'content-encoding': 'br' });
    expect(br.status).toBe(415);
    expect(br.json.code).toBe(415);
  });

  it('401 without or with wrong credentials; 403 for a role or project not allowed', async () => {
    const body = JSON.stringify([ev(60)]);
    const none = await post(imp(), body, {}, null);
    expect(none.status).toBe(401);
    expect(none.json).toEqual({ code: 401, error: 'Invalid credentials', status: 'Unauthorized' });
    const wrong = await post(imp(), body, {}, basicAuth(p.sa.username, 'wrong-secret'));
    expect(wrong.json).toEqual({ code: 401, error: 'Invalid credentials', status: 'Unauthorized' });
    expect((await post(imp(), body, {}, basicAuth('not-a-secret'))).status).toBe(401);

    const analyst = await seedProject(t.db, { role: 'analyst' });
    const a = await post(`/import?project_id=${analyst.id}`, body, {}, analyst.basic);
    expect(a.status).toBe(403);
    expect(a.json).toEqual({ code: 403, error: expect.stringContaining('analyst'), status: 'Forbidden' });
    // Unknown project: 403, indistinguishable from someone else's (ids cannot be probed).
    const unknown = await post('/import?project_id=987654', body);
    expect(unknown.json).toEqual({ code: 403, error: expect.any(String), status: 'Forbidden' });
    const missing = await post('/import', body);
    expect(missing.json).toEqual({ code: 400, error: expect.stringContaining('project_id'), status: 'Bad Request' });
    expect(await countEvents(t.db, analyst.id)).toBe(0);
  });

  it('the project secret as Basic username works, with or without project_id, only for its project', async () => {
    const q = await seedProject(t.db);
    const secret = basicAuth(q.api_secret);
    expect((await post(`/import?project_id=${q.id}`, JSON.stringify([ev(70)]), {}, secret)).status).toBe(200);
    expect((await post('/import', JSON.stringify([ev(71)]), {}, secret)).status).toBe(200);
    const other = await post(`/import?project_id=${p.id}`, JSON.stringify([ev(72)]), {}, secret);
    expect(other.status).toBe(403);
    expect(await countEvents(t.db, q.id)).toBe(2);
  });

  it('replaying a batch (with and without $insert_id) stores it once and answers the same', async () => {
    const q = await seedProject(t.db);
    const batch = [
      ...Array.from({ length: 50 }, (_, i) => ev(i)),
      ...Array.from({ length: 50 }, (_, i) => ({ event: 'no-id', properties: { time: NOW_S - i, distinct_id: `d${i}`, k: i } })),
    ];
    const first = await post(`/import?project_id=${q.id}`, JSON.stringify(batch), {}, q.basic);
    const second = await post(`/import?project_id=${q.id}`, zlib.gzipSync(JSON.stringify(batch)), { 'content-encoding': 'gzip' }, q.basic);
    expect(first.json).toEqual({ code: 200, num_records_imported: 100, status: 'OK' });
    expect(second.json).toEqual(first.json);
    expect(await countEvents(t.db, q.id)).toBe(100);
  });

  it("a service account of project A gets 403 on project B, and A's data never appears in B", async () => {
    const a = await seedProject(t.db);
    const b = await seedProject(t.db);
    const r = await post(`/import?project_id=${b.id}`, JSON.stringify([ev(80)]), {}, a.basic);
    expect(r.status).toBe(403);
    expect(r.json).toEqual({ code: 403, error: expect.stringContaining(String(b.id)), status: 'Forbidden' });
    expect((await post(`/import?project_id=${a.id}`, JSON.stringify([ev(81)]), {}, a.basic)).status).toBe(200);
    expect(await countEvents(t.db, a.id)).toBe(1);
    expect(await countEvents(t.db, b.id)).toBe(0);
  });

  it('400 naming the right region for a project of another residency', async () => {
    const eu = await seedProject(t.db, { residency: 'EU' });
    const r = await post(`/import?project_id=${eu.id}`, JSON.stringify([ev(90)]), {}, eu.basic);
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ code: 400, error: expect.stringMatching(/residency EU.*US region.*EU ingestion host/), status: 'Bad Request' });
    expect(await countEvents(t.db, eu.id)).toBe(0);
  });
});

describe.each(storeKindNames())('/import rate limit on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  beforeAll(async () => {
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db, { RATE_LIMIT_EVENTS_PER_SEC: 5, RATE_LIMIT_BURST: 20 });
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('429 with Retry-After once a project exceeds its events/s; other projects unaffected', async () => {
    const p = await seedProject(t.db);
    const q = await seedProject(t.db);
    const send = (proj: SeededProject, n: number, offset: number) =>
      fetch(`${app.url}/import?project_id=${proj.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: proj.basic },
        body: JSON.stringify(Array.from({ length: n }, (_, i) => ev(offset + i))),
      });
    expect((await send(p, 15, 0)).status).toBe(200);
    const limited = await send(p, 15, 100);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({ code: 429, error: expect.stringContaining('Too Many Requests'), status: 'Too Many Requests' });
    // 10 tokens missing at 5/s: two seconds.
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(await countEvents(t.db, p.id)).toBe(15);
    expect((await send(q, 15, 0)).status).toBe(200);
  });
});

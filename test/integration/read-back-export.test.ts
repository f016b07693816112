import { once } from 'node:events';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents , eventStoreOf } from '../helpers/events.js';
import { ingestEvents } from '../../src/ingest/events.ingest.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { TestDb } from '../helpers/db.js';
import { createStoreTestDb, storeKindNames } from '../helpers/store-kinds.js';
import { eventsRead, get, lines, qs, rawGet } from '../helpers/read-back.js';

const T = (iso: string) => Date.parse(iso);

describe.each(storeKindNames())('GET /api/2.0/export on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let a: SeededProject;
  let b: SeededProject;

  const exportUrl = (p: { id: number }, params: Record<string, string | number | undefined> = {}) =>
    `${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: '2024-03-01', to_date: '2024-03-02', ...params })}`;

  beforeAll(async () => {
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db);
    // A consumer — the weakest role — may read.
    a = await seedProject(t.db, { role: 'consumer' });
    b = await seedProject(t.db);
    const records = [
      { event: 'a', properties: { time: T('2024-02-29T23:59:59.999Z'), distinct_id: 'u0', $insert_id: 'before' } },
      { event: 'a', properties: { time: T('2024-03-01T00:00:00.000Z'), distinct_id: 'u1', $insert_id: 'first', plan: 'pro', n: 5 } },
      { event: 'b', properties: { time: T('2024-03-01T12:00:00.250Z'), distinct_id: 'u2', $insert_id: 'frac', plan: 'free', n: 7, tags: ['x', 'y'] } },
      { event: 'c', properties: { time: T('2024-03-02T08:00:00Z'), distinct_id: 'u1', $insert_id: 'song', song_id: 7, $import: true } },
      { event: 'c', properties: { time: T('2024-03-02T09:00:00Z'), distinct_id: 'u3', $insert_id: 'song2', song_id: '8', $source: 'warehouse-import' } },
      { event: 'a', properties: { time: T('2024-03-02T23:59:59.999Z'), distinct_id: 'u4', $insert_id: 'last', nested: { deep: [1, { y: null }] }, text: 'héllo ✓ "q"\n' } },
      { event: 'a', properties: { time: T('2024-03-03T00:00:00.000Z'), distinct_id: 'u5', $insert_id: 'after' } },
    ];
    const r = await ingestEvents(eventStoreOf(t.db), a.id, 'import', records);
    expect(r.imported).toBe(records.length);
    await ingestEvents(eventStoreOf(t.db), b.id, 'import', [{ event: 'b-only', properties: { time: T('2024-03-01T10:00:00Z'), distinct_id: 'x' } }]);

    // A lookup table mapped to song_id (the key is the event property's value as text).
    const [lt] = await t.db('lookup_tables')
      .insert({ project_id: a.id, name: 'songs', mapped_property: 'song_id', created_at: Date.now() })
      .returning('id');
    const tableId = typeof lt === 'object' ? (lt as { id: number }).id : (lt as number);
    await t.db('lookup_rows').insert([
      { lookup_table_id: tableId, key: '7', properties: JSON.stringify({ genre: 'jazz', year: 1959 }) },
      { lookup_table_id: tableId, key: '8', properties: JSON.stringify({ genre: 'rock' }) },
    ]);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('streams the stored events of the inclusive UTC days as JSONL, field for field, in time order', async () => {
    const res = await get(exportUrl(a), a.basic);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.text.endsWith('\n')).toBe(true);
    const got = lines(res.text);
    expect(got.map((l) => l.properties.$insert_id)).toEqual(['first', 'frac', 'song', 'song2', 'last']);
    expect(got[0]).toEqual({ event: 'a', properties: { time: T('2024-03-01T00:00:00Z') / 1000, distinct_id: 'u1', $insert_id: 'first', plan: 'pro', n: 5 } });
    expect(got[1]).toEqual({
      event: 'b',
      properties: { time: T('2024-03-01T12:00:00.250Z') / 1000, distinct_id: 'u2', $insert_id: 'frac', plan: 'free', n: 7, tags: ['x', 'y'] },
    });
    expect(got[1]!.properties.time).toBe(1709294400.25);
    expect(got[4]).toEqual({
      event: 'a',
      properties: { time: T('2024-03-02T23:59:59.999Z') / 1000, distinct_id: 'u4', $insert_id: 'last', nested: { deep: [1, { y: null }] }, text: 'héllo ✓ "q"\n' },
    });
  });

  it('re-imports its own output unchanged (round trip)', async () => {
    const first = lines((await get(exportUrl(a), a.basic)).text);
    const c = await seedProject(t.db);
    // Enrichment is read-side only; drop it before re-importing.
    const raw = first.map((l) => ({
      event: l.event,
      properties: Object.fromEntries(Object.entries(l.properties).filter(([k]) => !k.startsWith('song_id.'))),
    }));
    const r = await ingestEvents(eventStoreOf(t.db), c.id, 'import', raw, { strict: true });
    expect(r).toMatchObject({ imported: 5, rejected: [] });
    const second = lines((await get(exportUrl(c), c.basic)).text);
    expect(second).toEqual(raw);
  });

  it('answers application/x-ndjson when asked for it by name, and gzip when accepted', async () => {
    const nd = await get(exportUrl(a), a.basic, { accept: 'application/x-ndjson' });
    expect(nd.headers.get('content-type')).toBe('application/x-ndjson');
    const { res } = await rawGet(exportUrl(a), { authorization: a.basic, 'accept-encoding': 'gzip' });
    expect(res.headers['content-encoding']).toBe('gzip');
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = zlib.gunzipSync(Buffer.concat(chunks)).toString('utf8');
    expect(lines(text)).toEqual(lines(nd.text));
  });

  it('filters by event names and limit', async () => {
    const only = lines((await get(exportUrl(a, { event: '["b","c"]' }), a.basic)).text);
    expect(only.map((l) => l.properties.$insert_id)).toEqual(['frac', 'song', 'song2']);
    const none = await get(exportUrl(a, { event: '["nope"]' }), a.basic);
    expect(none.status).toBe(200);
    expect(none.text).toBe('');
    const limited = lines((await get(exportUrl(a, { limit: 2 }), a.basic)).text);
    expect(limited.map((l) => l.properties.$insert_id)).toEqual(['first', 'frac']);
    const limitedWhere = lines((await get(exportUrl(a, { limit: 1, where: 'properties["distinct_id"] == "u1"' }), a.basic)).text);
    expect(limitedWhere.map((l) => l.properties.$insert_id)).toEqual(['first']);
  });

  it.each([
    ['properties["plan"] == "pro"', ['first']],
    ['properties["plan"] != "pro"', ['frac', 'song', 'song2', 'last']],
    ['properties["n"] > 5', ['frac']],
    ['properties["n"] >= 5 and properties["n"] <= 7', ['first', 'frac']],
    ['properties["plan"] == "pro" or properties["$import"] == true', ['first', 'song']],
    ['not defined(properties["plan"])', ['song', 'song2', 'last']],
    ['defined(properties["nested"])', ['last']],
    ['"y" in properties["tags"]', ['frac']],
    ['properties["distinct_id"] == "u1"', ['first', 'song']],
    ['properties["time"] >= 1709337600', ['song', 'song2', 'last']],
    ['properties["$source"] == "warehouse-import"', ['song2']],
    ['(properties["plan"] == "pro" or properties["plan"] == "free") and not (properties["n"] == 7)', ['first']],
    ['properties["song_id.genre"] == "rock"', ['song2']],
  ])('where %s', async (where, expected) => {
    const res = await get(exportUrl(a, { where }), a.basic);
    expect(res.status).toBe(200);
    expect(lines(res.text).map((l) => l.properties.$insert_id)).toEqual(expected);
  });

  it('joins mapped lookup tables in as <property>.<column>', async () => {
    const got = lines((await get(exportUrl(a, { event: '["c"]' }), a.basic)).text);
    expect(got[0]!.properties).toMatchObject({ song_id: 7, 'song_id.genre': 'jazz', 'song_id.year': 1959 });
    expect(got[1]!.properties).toMatchObject({ song_id: '8', 'song_id.genre': 'rock' });
    expect(got[1]!.properties).not.toHaveProperty('song_id.year');
  });

  it('enriches from a table created, mapped and filled through the lookup-table APIs', async () => {
    const d = await seedProject(t.db); // owner
    await ingestEvents(eventStoreOf(t.db), d.id, 'import', [
      { event: 'buy', properties: { time: T('2024-03-01T10:00:00Z'), distinct_id: 'u', $insert_id: 'buy-1', item: 'sku-1' } },
      { event: 'buy', properties: { time: T('2024-03-01T11:00:00Z'), distinct_id: 'u', $insert_id: 'buy-2', item: 'sku-9' } },
    ]);
    const created = await fetch(`${app.url}/api/app/projects/${d.id}/lookup-tables`, {
      method: 'POST',
      headers: { authorization: d.basic, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'items', mapped_property: 'item' }),
    });
    expect(created.status).toBe(200);
    const { results } = (await created.json()) as { results: { id: number } };
    const put = await fetch(`${app.url}/lookup-tables/${results.id}?project_id=${d.id}`, {
      method: 'PUT',
      headers: { authorization: d.basic, 'content-type': 'text/csv' },
      body: 'item,color,price\nsku-1,red,9.5\nsku-2,blue,3\n',
    });
    expect(put.status).toBe(200);
    const got = lines((await get(exportUrl(d), d.basic)).text);
    expect(got.map((l) => l.properties)).toEqual([
      { time: T('2024-03-01T10:00:00Z') / 1000, distinct_id: 'u', $insert_id: 'buy-1', item: 'sku-1', 'item.color': 'red', 'item.price': 9.5 },
      { time: T('2024-03-01T11:00:00Z') / 1000, distinct_id: 'u', $insert_id: 'buy-2', item: 'sku-9' },
    ]);
    const red = lines((await get(exportUrl(d, { where: 'properties["item.color"] == "red"' }), d.basic)).text);
    expect(red.map((l) => l.properties.$insert_id)).toEqual(['buy-1']);
  });

  it('keeps projects apart: 401 without credentials, 403 on another project, the project secret alone finds its project', async () => {
    expect((await get(exportUrl(a))).status).toBe(401);
    expect((await get(exportUrl(a), basicAuth('nobody', 'wrong'))).status).toBe(401);
    const cross = await get(exportUrl(b), a.basic);
    expect(cross.status).toBe(403);
    expect(cross.json()).toMatchObject({ code: 403, status: 'Forbidden', error: expect.any(String) });
    const bLines = lines((await get(exportUrl(b), b.basic)).text);
    expect(bLines.map((l) => l.event)).toEqual(['b-only']);

    const secret = basicAuth(a.api_secret);
    const bySecret = await get(`${app.url}/api/2.0/export${qs({ from_date: '2024-03-01', to_date: '2024-03-02' })}`, secret);
    expect(bySecret.status).toBe(200);
    expect(lines(bySecret.text)).toHaveLength(5);
    expect((await get(exportUrl(b), secret)).status).toBe(403);
    const missing = await get(`${app.url}/api/2.0/export${qs({ from_date: '2024-03-01', to_date: '2024-03-02' })}`, a.basic);
    expect(missing.status).toBe(400);
    expect(missing.json().error).toMatch(/project_id/);
  });

  it.each([
    ['no from_date', { from_date: undefined }, /'from_date' is required/],
    ['no to_date', { to_date: undefined }, /'to_date' is required/],
    ['from_date not a date', { from_date: 'yesterday' }, /'from_date' must be a date/],
    ['to_date not a real day', { to_date: '2024-02-30' }, /'to_date' must be a date/],
    ['from after to', { from_date: '2024-03-03', to_date: '2024-03-02' }, /after/],
    ['event not JSON', { event: '[a' }, /'event' must be a JSON array/],
    ['event not strings', { event: '[1,2]' }, /'event' must be a JSON array of non-empty strings/],
    ['event an object', { event: '{"a":1}' }, /'event'/],
    ['where syntax', { where: 'properties["a"] == ' }, /invalid 'where' expression: .* at position 19/],
    ['where unknown name', { where: 'plan == "pro"' }, /unknown name 'plan'/],
    ['limit zero', { limit: 0 }, /'limit' must be between 1 and 100000/],
    ['limit too big', { limit: 100_001 }, /'limit'/],
    ['limit not a number', { limit: 'ten' }, /'limit' must be an integer/],
    ['project_id not a number', { project_id: 'abc' }, /project_id/],
  ])('400 for %s, in the {code,error,status,request} shape', async (_name, params, message) => {
    const res = await get(exportUrl(a, params as Record<string, string>), a.basic);
    expect(res.status).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ code: 400, status: 'Bad Request', request: expect.stringContaining('/api/2.0/export?') });
    expect(body.error).toMatch(message);
  });

  it('400 for a repeated parameter', async () => {
    const res = await get(`${exportUrl(a)}&from_date=2024-03-02`, a.basic);
    expect(res.status).toBe(400);
    expect(res.json().error).toMatch(/'from_date' must be given once/);
  });

  it('reports the position of a where syntax error as a field too', async () => {
    const res = await get(exportUrl(a, { where: 'properties["a"] === 1' }), a.basic);
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ position: 18 });
  });
});

describe.each(storeKindNames())('export streaming of 50k events on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  const N = 50_000;
  const base = T('2024-06-01T00:00:00Z');

  beforeAll(async () => {
    t = await createStoreTestDb(kind);
    app = await startTestApp(t.db);
    p = await seedProject(t.db);
    // ~700 bytes a line: 35 MB in all, far more than socket buffers can hide.
    const pad = 'p'.repeat(600);
    for (let i = 0; i < N; i += 2000) {
      const batch = Array.from({ length: 2000 }, (_, j) => ({
        event: 'bulk',
        properties: { time: base + (i + j) * 1000, distinct_id: `u${(i + j) % 97}`, $insert_id: `bulk-${i + j}`, pad },
      }));
      await ingestEvents(eventStoreOf(t.db), p.id, 'import', batch);
    }
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const url = () => `${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: '2024-06-01', to_date: '2024-06-02' })}`;

  it('stops reading pages while the client is not reading, releases the database between pages, and delivers all in order', async () => {
    const before = await eventsRead('export');
    const { res } = await rawGet(url(), { authorization: p.basic });
    expect(res.statusCode).toBe(200);
    const [first] = (await once(res, 'data')) as [Buffer];
    res.pause();
    // Until the reads stop: the socket buffers fill at the store's pace (a loaded ClickHouse once
    // delivered a page more after a fixed 600 ms wait).
    let readWhilePaused = -1;
    for (;;) {
      await new Promise((r) => setTimeout(r, 600));
      const read = (await eventsRead('export')) - before;
      if (read === readWhilePaused) break;
      readWhilePaused = read;
    }
    // Back-pressure: the server has read only what the socket buffers could take.
    expect(readWhilePaused).toBeGreaterThan(0);
    expect(readWhilePaused).toBeLessThan(N);
    // The database (on SQLite: its single connection) is free meanwhile.
    const started = Date.now();
    expect(await countEvents(t.db, p.id)).toBe(N);
    expect(Date.now() - started).toBeLessThan(2000);
    await new Promise((r) => setTimeout(r, 300));
    expect((await eventsRead('export')) - before).toBe(readWhilePaused);

    const chunks: Buffer[] = [first];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.resume();
    await once(res, 'end');
    expect(chunks.length).toBeGreaterThan(10);
    const got = lines(Buffer.concat(chunks).toString('utf8'));
    expect(got).toHaveLength(N);
    expect(got[0]!.properties).toMatchObject({ time: base / 1000, $insert_id: 'bulk-0' });
    expect(got[N - 1]!.properties).toMatchObject({ time: (base + (N - 1) * 1000) / 1000, $insert_id: `bulk-${N - 1}` });
    for (let i = 1; i < got.length; i++) expect(got[i]!.properties.time).toBeGreaterThan(got[i - 1]!.properties.time);
    expect((await eventsRead('export')) - before).toBe(N);
  }, 60_000);

  it('stops reading when the client goes away', async () => {
    const before = await eventsRead('export');
    const { req, res } = await rawGet(url(), { authorization: p.basic });
    await once(res, 'data');
    req.destroy();
    await new Promise((r) => setTimeout(r, 500));
    const after = (await eventsRead('export')) - before;
    await new Promise((r) => setTimeout(r, 500));
    expect((await eventsRead('export')) - before).toBe(after);
    expect(after).toBeLessThan(N);
  }, 30_000);
});

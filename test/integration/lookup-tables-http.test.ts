/** Lookup tables over HTTP: app API (create, get, patch mapping, delete) and ingestion API (list, PUT CSV). */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countLookupRows, listLookupRows } from '../../src/db/lookup-tables.repo.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const MAX_BYTES = 8 * 1024 * 1024;

describe.each(dbKinds())('lookup tables over HTTP on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { LOOKUP_TABLE_MAX_BYTES: MAX_BYTES });
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  const create = (body: unknown, auth = p.basic, pid = p.id) =>
    fetch(`${app.url}/api/app/projects/${pid}/lookup-tables`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const put = (id: number | string, body: string | Buffer, headers: Record<string, string> = {}, auth = p.basic, pid: number | undefined = p.id) =>
    fetch(`${app.url}/lookup-tables/${id}${pid === undefined ? '' : `?project_id=${pid}`}`, {
      method: 'PUT',
      headers: { authorization: auth, 'content-type': 'text/csv', ...headers },
      body: new Uint8Array(Buffer.from(body)),
    });
  const newTable = async (name: string, mapped?: string) => {
    const res = await create({ name, ...(mapped ? { mapped_property: mapped } : {}) });
    expect(res.status).toBe(200);
    return (await res.json()).results.id as number;
  };

  it('create → list → replace → read: the whole flow, with the exact bodies', async () => {
    const res = await create({ name: 'products', mapped_property: 'product_id' });
    expect(res.status).toBe(200);
    const created = await res.json();
    expect(created).toEqual({
      status: 'ok',
      results: { id: expect.any(Number), name: 'products', mapped_property: 'product_id', created: expect.any(String), last_replaced: null, num_rows: 0 },
    });
    const id = created.results.id as number;

    const list = await fetch(`${app.url}/lookup-tables?project_id=${p.id}`, { headers: { authorization: p.basic } });
    expect(await list.json()).toEqual({ code: 200, status: 'OK', results: [{ id, name: 'products' }] });

    const replaced = await put(id, 'product_id,name,price,launched,tags\np1,Anvil,9.99,2024-01-02T03:04:05Z,"[""a"",""b""]"\np2,Rocket,,,\n');
    expect(replaced.status).toBe(200);
    expect(await replaced.json()).toEqual({ code: 200, status: 'OK', num_rows: 2 });
    expect(await listLookupRows(t.db, id)).toEqual([
      { key: 'p1', properties: { name: 'Anvil', price: 9.99, launched: '2024-01-02T03:04:05Z', tags: ['a', 'b'] } },
      { key: 'p2', properties: { name: 'Rocket' } },
    ]);
    const one = await (await fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables/${id}`, { headers: { authorization: p.basic } })).json();
    expect(one.results).toMatchObject({ id, num_rows: 2, last_replaced: expect.any(String) });
  });

  it('gzip CSV; project secret as credentials without project_id', async () => {
    const id = await newTable('gz');
    const csv = 'k,v\n' + Array.from({ length: 1000 }, (_, i) => `key${i},${i % 2 === 0}`).join('\n');
    const res = await put(id, zlib.gzipSync(csv), { 'content-encoding': 'gzip' }, basicAuth(p.api_secret), undefined);
    expect(await res.json()).toEqual({ code: 200, status: 'OK', num_rows: 1000 });
    expect((await listLookupRows(t.db, id)).find((r) => r.key === 'key7')).toEqual({ key: 'key7', properties: { v: false } });
  });

  it('a bad row: 400 with failed_records, and the table keeps its content', async () => {
    const id = await newTable('atomic');
    await put(id, 'id,v\na,1\nb,2\n');
    const res = await put(id, 'id,v\nc,3\nc,4\n,5\nd,6,7\n');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 400,
      error: '3 row(s) failed validation; the lookup table was not changed',
      status: 'Bad Request',
      failed_records: [
        { index: 1, message: "line 3: duplicate key 'c' (first in row 0)" },
        { index: 2, message: "line 4: the key ('id', the first column) is empty" },
        { index: 3, message: 'line 5: has 3 field(s) but the header has 2' },
      ],
    });
    expect(await listLookupRows(t.db, id)).toEqual([
      { key: 'a', properties: { v: 1 } },
      { key: 'b', properties: { v: 2 } },
    ]);
    const dup = await put(id, 'id,v,v\nx,1,2\n');
    expect(dup.status).toBe(400);
    expect(await dup.json()).toEqual({
      code: 400,
      error: "duplicate header 'v' (columns 2 and 3): header names must be unique",
      status: 'Bad Request',
      failed_records: [],
    });
    expect(await countLookupRows(t.db, id)).toBe(2);
  });

  it('404 for unknown tables and for another project\'s table; 415, 413, bad gzip', async () => {
    const id = await newTable('limits');
    const unknown = await put(999999, 'id\n1\n');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 404, status: 'Not Found', error: expect.stringMatching(/lookup table 999999 not found/) });
    expect((await put('abc', 'id\n1\n')).status).toBe(404);
    // Beyond PostgreSQL's integer ids: unknown like any other, not a 500 ("out of range").
    expect((await put(2147483648, 'id\n1\n')).status).toBe(404);
    expect((await put(1, 'id\n1\n', {}, p.basic, 2147483648)).status).toBe(403);
    const other = await seedProject(t.db);
    // Another project's credentials and project_id: that project has no such table.
    expect((await put(id, 'id\n1\n', {}, other.basic, other.id)).status).toBe(404);

    const json = await put(id, '{"a":1}', { 'content-type': 'application/json' });
    expect(json.status).toBe(415);
    expect(await json.json()).toMatchObject({ code: 415, error: expect.stringMatching(/text\/csv/) });
    const deflate = await put(id, 'id\n1\n', { 'content-encoding': 'br' });
    expect(deflate.status).toBe(415);
    const tooBig = await put(id, 'id,v\n' + 'x'.repeat(MAX_BYTES));
    expect(tooBig.status).toBe(413);
    const bomb = await put(id, zlib.gzipSync(Buffer.alloc(MAX_BYTES + 1024, `x,${'a'.repeat(1000)}\n`)), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    const corrupt = await put(id, Buffer.from('definitely not gzip'), { 'content-encoding': 'gzip' });
    expect(corrupt.status).toBe(400);
    expect(await countLookupRows(t.db, id)).toBe(0);
  });

  it('authentication and roles: 401, 403 (consumer may list but not write; other projects)', async () => {
    const id = await newTable('auth');
    const wrong = await put(id, 'id\n1\n', {}, basicAuth(p.sa.username, 'nope'));
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ code: 401, error: 'Invalid credentials', status: 'Unauthorized' });
    const none = await fetch(`${app.url}/lookup-tables?project_id=${p.id}`);
    expect(none.status).toBe(401);

    const consumer = await seedProject(t.db, { role: 'consumer' });
    const ct = await create({ name: 'nope' }, consumer.basic, consumer.id);
    expect(ct.status).toBe(403);
    expect(await ct.json()).toEqual({ status: 'error', error: expect.stringMatching(/role 'consumer'/) });
    const list = await fetch(`${app.url}/lookup-tables?project_id=${consumer.id}`, { headers: { authorization: consumer.basic } });
    expect(await list.json()).toEqual({ code: 200, status: 'OK', results: [] });
    const foreign = await fetch(`${app.url}/lookup-tables?project_id=${p.id}`, { headers: { authorization: consumer.basic } });
    expect(foreign.status).toBe(403);
    const foreignPut = await put(id, 'id\n1\n', {}, consumer.basic, p.id);
    expect(foreignPut.status).toBe(403);
  });

  it('app API: validation, 409 on a duplicate name, PATCH mapping, DELETE', async () => {
    expect((await create({})).status).toBe(400);
    const bad = await create({ name: 'x', extra: 1 });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ status: 'error', type: 'validation_error' });
    const id = await newTable('mapped');
    const dup = await create({ name: 'mapped' });
    expect(dup.status).toBe(409);

    const patch = (body: unknown, tid: number | string = id) =>
      fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables/${tid}`, {
        method: 'PATCH',
        headers: { authorization: p.basic, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const mapped = await patch({ mapped_property: 'sku' });
    expect((await mapped.json()).results).toMatchObject({ id, name: 'mapped', mapped_property: 'sku' });
    expect((await t.db('lookup_tables').where({ id }).first()).mapped_property).toBe('sku');
    const unmapped = await patch({ mapped_property: null, name: 'renamed' });
    expect((await unmapped.json()).results).toMatchObject({ name: 'renamed', mapped_property: null });
    expect((await patch({ mapped_property: 5 })).status).toBe(400);
    expect((await patch({}, 424242)).status).toBe(404);

    await put(id, 'id,v\na,1\n');
    const del = await fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables/${id}`, { method: 'DELETE', headers: { authorization: p.basic } });
    expect(await del.json()).toEqual({ status: 'ok', results: { id, deleted: true } });
    expect(await countLookupRows(t.db, id)).toBe(0);
    expect((await put(id, 'id\n1\n')).status).toBe(404);
  });

  it('app API: concurrent creates and renames to one name get one 200 and 409s, never a 500', async () => {
    const creates = await Promise.all(Array.from({ length: 8 }, () => create({ name: 'contended' })));
    expect(creates.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => newTable(`renamed-from-${i}`)));
    const renames = await Promise.all(
      ids.map((id) =>
        fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables/${id}`, {
          method: 'PATCH',
          headers: { authorization: p.basic, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'renamed-to' }),
        }),
      ),
    );
    expect(renames.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    expect(await t.db('lookup_tables').where({ project_id: p.id, name: 'renamed-to' })).toHaveLength(1);
  });

  it('app API: a NUL or an unpaired surrogate in a name or mapped property is a 400, and nothing is stored', async () => {
    const before = (await t.db('lookup_tables').where({ project_id: p.id }).count({ n: '*' }).first())!.n;
    for (const body of [{ name: 'nul\u0000' }, { name: '\ud800lone' }, { name: 'ok-name', mapped_property: 'sku\u0000' }]) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toMatchObject({ status: 'error', type: 'validation_error', error: expect.stringMatching(/NUL character or an unpaired surrogate/) });
    }
    expect((await t.db('lookup_tables').where({ project_id: p.id }).count({ n: '*' }).first())!.n).toBe(before);
    const id = await newTable('clean');
    const patched = await fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables/${id}`, {
      method: 'PATCH',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x\udc00' }),
    });
    expect(patched.status).toBe(400);
    expect((await t.db('lookup_tables').where({ id }).first()).name).toBe('clean');
  });

  it('replaces a 50,000-row CSV in one request, then replaces it again all-or-nothing', async () => {
    const id = await newTable('big');
    const rows = Array.from({ length: 50_000 }, (_, i) => `txn-${i},${i * 1.5},${i % 3 === 0},2024-01-01T00:00:00Z,"[""c${i % 7}""]",customer ${i % 1000}`);
    const csv = `txn_id,amount,refunded,at,categories,customer\n${rows.join('\n')}\n`;
    const started = performance.now();
    const res = await put(id, zlib.gzipSync(csv), { 'content-encoding': 'gzip' });
    const ms = performance.now() - started;
    expect(await res.json()).toEqual({ code: 200, status: 'OK', num_rows: 50_000 });
    expect(await countLookupRows(t.db, id)).toBe(50_000);
    const [row] = (await listLookupRows(t.db, id)).filter((r) => r.key === 'txn-49998');
    expect(row).toEqual({
      key: 'txn-49998',
      properties: { amount: 74997, refunded: true, at: '2024-01-01T00:00:00Z', categories: ['c4'], customer: 'customer 998' },
    });
    // A bad last row leaves all 50,000 in place.
    const bad = await put(id, `${csv}txn-0,dup,,,,\n`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).failed_records).toEqual([{ index: 50_000, message: "line 50002: duplicate key 'txn-0' (first in row 0)" }]);
    expect(await countLookupRows(t.db, id)).toBe(50_000);
    expect(ms).toBeLessThan(20_000);
    console.log(`[lookup ${kind}] 50k-row gzip CSV replace over HTTP: ${ms.toFixed(0)} ms`);
  });
});

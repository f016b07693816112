import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertLookupTable, listLookupRows, type LookupTable } from '../../src/db/lookup-tables.repo.js';
import { replaceLookupTable } from '../../src/ingest/lookup-tables.ingest.js';
import { ValidationError } from '../../src/lib/errors.js';
import { seedProject } from '../helpers/accounts.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

async function rejection(p: Promise<unknown>): Promise<ValidationError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

describe.each(dbKinds())('lookup table write path on %s', (kind) => {
  let t: TestDb;
  let table: LookupTable;
  beforeAll(async () => {
    t = await createTestDb(kind);
    const p = await seedProject(t.db);
    table = await insertLookupTable(t.db, { projectId: p.id, name: 'products', mappedProperty: 'sku', now: Date.now() });
  });
  afterAll(async () => t.destroy());

  const GOOD = [
    'sku,name,price,in_stock,released,tags,note',
    'A-1,Anvil,9.5,true,2024-05-01T00:00:00Z,"[""heavy"",""iron""]",',
    '"B,2","Rocket ""X""",1200,FALSE,2023-01-02,[],"multi',
    'line"',
    '007,Bond,0,true,,,',
  ].join('\r\n');

  it('stores typed rows keyed by the first column (RFC 4180 quoting, CRLF, multi-line fields)', async () => {
    expect(await replaceLookupTable(t.db, table.id, GOOD)).toEqual({ rows: 3 });
    expect(await listLookupRows(t.db, table.id)).toEqual([
      { key: '007', properties: { name: 'Bond', price: 0, in_stock: true } },
      { key: 'A-1', properties: { name: 'Anvil', price: 9.5, in_stock: true, released: '2024-05-01T00:00:00Z', tags: ['heavy', 'iron'] } },
      { key: 'B,2', properties: { name: 'Rocket "X"', price: 1200, in_stock: false, released: '2023-01-02', tags: [], note: 'multi\r\nline' } },
    ]);
    const stamp = await t.db('lookup_tables').where({ id: table.id }).first();
    expect(Number(stamp.replaced_at)).toBeGreaterThan(0);
  });

  it('accepts a stream of chunks split anywhere, with a BOM', async () => {
    const text = `\uFEFFid,v\n${Array.from({ length: 100 }, (_, i) => `k${i},${i}`).join('\n')}\n`;
    async function* chunks() {
      for (let i = 0; i < text.length; i += 7) yield Buffer.from(text.slice(i, i + 7));
    }
    const other = await insertLookupTable(t.db, { projectId: table.projectId, name: 'streamed', mappedProperty: null, now: 1 });
    expect(await replaceLookupTable(t.db, other.id, chunks())).toEqual({ rows: 100 });
    const rows = await listLookupRows(t.db, other.id);
    expect(rows.find((r) => r.key === 'k42')).toEqual({ key: 'k42', properties: { v: 42 } });
  });

  it('decodes UTF-8 split across chunk boundaries', async () => {
    const text = Buffer.from('id,name\nz1,Zürich ✓ 東京 🎉\nz2,"naïve, ""quoted"""\n', 'utf8');
    async function* bytes() {
      for (let i = 0; i < text.length; i += 3) yield text.subarray(i, i + 3);
    }
    const other = await insertLookupTable(t.db, { projectId: table.projectId, name: 'utf8', mappedProperty: null, now: 1 });
    await replaceLookupTable(t.db, other.id, bytes());
    expect(await listLookupRows(t.db, other.id)).toEqual([
      { key: 'z1', properties: { name: 'Zürich ✓ 東京 🎉' } },
      { key: 'z2', properties: { name: 'naïve, "quoted"' } },
    ]);
  });

  it('is all-or-nothing: any bad row rejects the whole CSV with failed_records and changes nothing', async () => {
    await replaceLookupTable(t.db, table.id, GOOD);
    const before = await listLookupRows(t.db, table.id);
    const bad = ['sku,name', 'X-1,ok', ',no key', 'X-2,too,many', 'X-1,dup', 'X-3,fine'].join('\n');
    const err = await rejection(replaceLookupTable(t.db, table.id, bad));
    expect(err.status).toBe(400);
    expect(err.message).toBe('3 row(s) failed validation; the lookup table was not changed');
    expect(err.details?.failed_records).toEqual([
      { index: 1, message: "line 3: the key ('sku', the first column) is empty" },
      { index: 2, message: 'line 4: has 3 field(s) but the header has 2' },
      { index: 3, message: "line 5: duplicate key 'X-1' (first in row 0)" },
    ]);
    expect(await listLookupRows(t.db, table.id)).toEqual(before);
  });

  it('rejects bad headers, malformed quoting and empty input', async () => {
    const dupHeader = await rejection(replaceLookupTable(t.db, table.id, 'id,a,a\n1,2,3'));
    expect([dupHeader.status, dupHeader.message]).toEqual([400, "duplicate header 'a' (columns 2 and 3): header names must be unique"]);
    const quote = await rejection(replaceLookupTable(t.db, table.id, 'id,a\n1,"open\n2,3'));
    expect(quote.details?.failed_records).toEqual([{ index: 0, message: expect.stringMatching(/not valid RFC 4180 CSV/) }]);
    const huge = await rejection(replaceLookupTable(t.db, table.id, `id,a\n1,${'x'.repeat(300 * 1024)}\n`));
    expect(huge.details?.failed_records).toEqual([{ index: 0, message: expect.stringMatching(/Max Record Size/) }]);
    const nul = await rejection(replaceLookupTable(t.db, table.id, 'id,a\n1,x\u0000y\n'));
    expect(nul.details?.failed_records).toEqual([{ index: 0, message: expect.stringMatching(/line 2: .*NUL/) }]);
    const empty = await rejection(replaceLookupTable(t.db, table.id, ''));
    expect(empty.message).toMatch(/CSV is empty/);
    expect((await listLookupRows(t.db, table.id)).length).toBe(3);
  });

  it('a header-only CSV empties the table; an unknown table is 404', async () => {
    const other = await insertLookupTable(t.db, { projectId: table.projectId, name: 'empty-me', mappedProperty: null, now: 1 });
    await replaceLookupTable(t.db, other.id, 'id,v\na,1');
    expect(await replaceLookupTable(t.db, other.id, 'id,v\n')).toEqual({ rows: 0 });
    expect(await listLookupRows(t.db, other.id)).toEqual([]);
    const missing = await rejection(replaceLookupTable(t.db, 987654, 'id\n1'));
    expect(missing.status).toBe(404);
  });
});

/**
 * Lookup tables under concurrent writes, over HTTP, with the interleaving forced (see
 * test/helpers/races.ts): an upload or a PATCH racing the table's DELETE is a 404, never a 500;
 * a replace racing another replace leaves exactly one upload's rows (replaces of one table are
 * serialised), and many concurrent uploads all answer 200 and leave exactly one of them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteLookupTable, listLookupRows, replaceLookupRows } from '../../src/db/lookup-tables.repo.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { committedDuring } from '../helpers/races.js';

describe.each(dbKinds())('lookup table races on %s', (kind) => {
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

  const appApi = (path: string, init: RequestInit = {}) =>
    fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables${path}`, {
      ...init,
      headers: { authorization: p.basic, 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
    });
  const upload = (id: number, csv: string) =>
    fetch(`${app.url}/lookup-tables/${id}?project_id=${p.id}`, { method: 'PUT', headers: { authorization: p.basic, 'content-type': 'text/csv' }, body: csv });
  let tables = 0;
  const newTable = async (csv?: string) => {
    const res = await appApi('', { method: 'POST', body: JSON.stringify({ name: `t${++tables}` }) });
    expect(res.status).toBe(200);
    const id = (await res.json()).results.id as number;
    if (csv) expect((await upload(id, csv)).status).toBe(200);
    return id;
  };
  const keysOf = async (id: number) => (await listLookupRows(t.db, id)).map((r) => `${r.key}=${String(r.properties.v)}`).sort();
  // A savepoint when `db` is the held transaction: the app route's own delete.
  const remove = (db: TestDb['db'], id: number) => db.transaction((trx) => deleteLookupTable(trx, id));

  /** `change` committed in the middle of `operation` (helpers/races.ts). */
  const racing = <T>(change: (db: TestDb['db']) => PromiseLike<unknown>, sqliteAfter: RegExp, operation: () => Promise<T>) =>
    committedDuring(kind, t.db, change, sqliteAfter, operation);
  const selectTable = /^select .* from [`"]lookup_tables[`"]/;

  it('an upload racing the DELETE of its table is a 404, and no row is left behind', async () => {
    const id = await newTable('k,v\nold,1\n');
    const res = await racing((db) => remove(db, id), selectTable, () => upload(id, 'k,v\na,1\nb,2\n'));
    expect(res.status, await res.clone().text()).toBe(404);
    expect(await res.json()).toMatchObject({ error: expect.stringMatching(new RegExp(`^lookup table ${id} not found`)) });
    expect(await t.db('lookup_rows').where({ lookup_table_id: id })).toEqual([]);
  });

  it('a PATCH racing the DELETE of its table is the app API 404, as for a table already gone', async () => {
    const id = await newTable();
    const res = await racing((db) => remove(db, id), selectTable, () =>
      appApi(`/${id}`, { method: 'PATCH', body: JSON.stringify({ name: 'renamed', mapped_property: 'sku' }) }),
    );
    expect(res.status).toBe(404);
    const gone = await appApi(`/${id}`, { method: 'PATCH', body: JSON.stringify({ name: 'renamed' }) });
    expect(gone.status).toBe(404);
    expect(await res.json()).toEqual(await gone.json());
  });

  it('a replace racing another replace of the table leaves exactly the later one', async () => {
    const id = await newTable('k,v\nold,1\n');
    const first: [string, string][] = [
      ['a', '{"v":"first"}'],
      ['b', '{"v":"first"}'],
    ];
    const res = await racing((db) => replaceLookupRows(db, id, first, Date.now()), selectTable, () => upload(id, 'k,v\nb,second\nc,second\n'));
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await keysOf(id)).toEqual(['b=second', 'c=second']);
  });

  it('many concurrent uploads of one table: every one 200, and the table is exactly one of them', async () => {
    const id = await newTable('k,v\nold,1\n');
    const csvs = Array.from({ length: 8 }, (_, i) => 'k,v\n' + Array.from({ length: 200 }, (_, j) => `key${(j + i * 50) % 400},u${i}`).join('\n') + '\n');
    const answers = await Promise.all(csvs.map((csv) => upload(id, csv)));
    for (const a of answers) expect(a.status, await a.clone().text()).toBe(200);
    const rows = await keysOf(id);
    const uploads = csvs.map((csv, i) => csv.trim().split('\n').slice(1).map((l) => `${l.split(',')[0]!}=u${i}`).sort());
    expect(uploads).toContainEqual(rows);
  });
});

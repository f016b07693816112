/**
 * The sqlite and postgres connectors against real sources: schema description (nullability
 * traced through queries), ordered reads resumed with an offset, big integers, counting, reads
 * that cannot write, and cancellation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector } from '../../connectors/index.js';
import { WarehouseError, WarehouseReadAborted, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';
import { silentLogger } from '../../src/lib/logger.js';
import { sqliteSourceFixture, postgresSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';

const fixtures = [sqliteSourceFixture, postgresSourceFixture].filter((f) => f.available());
const settings = configFrom({});

async function collect(it: AsyncIterable<Row>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of it) rows.push(r);
  return rows;
}

describe.each(fixtures.map((f) => [f.type, f] as const))('%s connector', (type, fixture) => {
  let src: WarehouseSourceHandle;
  let c: WarehouseConnector;
  const ctx = () => ({ log: silentLogger, signal: new AbortController().signal });

  beforeAll(async () => {
    src = await fixture.create();
    await src.createTable({
      name: 'nums',
      columns: [
        { name: 'n', type: 'integer', notNull: true },
        { name: 'label', type: 'text' },
      ],
    });
    await src.insertRows('nums', Array.from({ length: 2500 }, (_, i) => ({ n: i, label: i % 2 ? 'odd' : null })));
    c = createConnector(type, src.sourceBody().config, settings);
  });
  afterAll(async () => {
    await c?.close();
    await src?.cleanup();
  });

  it('describes tables and queries, tracing NOT NULL through a query', async () => {
    expect(await c.describe({ table: src.tableRef('nums') })).toEqual([
      { name: 'n', type: expect.stringMatching(/int/), nullable: false },
      { name: 'label', type: 'text', nullable: true },
    ]);
    const q = await c.describe({ query: `SELECT label AS l, n, n + 1 AS m FROM ${src.tableRef('nums')}` });
    expect(q.map((x) => [x.name, x.nullable])).toEqual([
      ['l', true],
      ['n', false],
      ['m', true],
    ]);
    await expect(c.describe({ table: src.tableRef('missing') })).rejects.toThrow(/table not found/);
    await expect(c.describe({ query: 'SELECT nope FROM nowhere' })).rejects.toBeInstanceOf(WarehouseError);
  });

  it('reads in a deterministic order and resumes exactly with an offset', async () => {
    const spec = { source: { table: src.tableRef('nums') }, columns: ['n', 'label'], orderBy: ['n'] };
    expect(await c.count!(spec, ctx())).toBe(2500);
    const all = await collect(c.stream(spec, ctx()));
    expect(all.map((r) => r.n)).toEqual(Array.from({ length: 2500 }, (_, i) => i));
    const rest = await collect(c.stream({ ...spec, offset: 2100 }, ctx()));
    expect(rest.map((r) => r.n)).toEqual(Array.from({ length: 400 }, (_, i) => 2100 + i));
    const after = await collect(c.stream({ ...spec, after: { column: 'n', value: 2497 } }, ctx()));
    expect(after).toEqual([
      { n: 2498, label: null },
      { n: 2499, label: 'odd' },
    ]);
  });

  it('hands integers beyond 2^53 over as exact strings', async () => {
    const rows = await collect(c.stream({ source: { query: 'SELECT 9007199254740993 AS big, 42 AS small' } }, ctx()));
    expect(rows).toEqual([{ big: '9007199254740993', small: 42 }]);
  });

  it('reads cannot write: a user query that modifies the source fails', async () => {
    const write = type === 'sqlite' ? `DELETE FROM nums RETURNING n` : `WITH d AS (DELETE FROM ${src.tableRef('nums')} RETURNING n) SELECT * FROM d`;
    await expect(collect(c.stream({ source: { query: write } }, ctx()))).rejects.toThrow();
    expect(await c.count!({ source: { table: src.tableRef('nums') } }, ctx())).toBe(2500);
  });

  it('stops reading when the signal aborts', async () => {
    const ac = new AbortController();
    let n = 0;
    const read = (async () => {
      for await (const _row of c.stream({ source: { table: src.tableRef('nums') }, orderBy: ['n'] }, { log: silentLogger, signal: ac.signal })) {
        n += 1;
        if (n === 10) ac.abort();
      }
    })();
    await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
    expect(n).toBeLessThan(2500);
  });

  // Only Postgres runs statements on a server that can be told to cancel; a SQLite source is
  // read in-process, and its abort is covered by the test above.
  it.runIf(type === 'postgres')('cancels a long-running statement on the server when aborted', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const read = collect(c.stream({ source: { query: 'SELECT pg_sleep(30) AS s' } }, { log: silentLogger, signal: ac.signal }));
    setTimeout(() => ac.abort(), 300);
    await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a connection test fails clearly on a bad source', async () => {
    const bad =
      type === 'sqlite'
        ? createConnector('sqlite', { path: '/nonexistent/warehouse.sqlite' }, settings)
        : createConnector('postgres', { connection_string: 'postgres://postgres@127.0.0.1:5432/no_such_database_here' }, settings);
    await expect(bad.test()).rejects.toThrow(type === 'sqlite' ? /SQLite file not found/ : /does not exist/);
  });
});

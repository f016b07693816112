/**
 * Every connector (availableWarehouseSources) against its real source or stand-in: schema description (nullability
 * traced through queries), ordered reads resumed with an offset, big integers, counting, reads
 * that cannot write, and cancellation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector } from '../../connectors/index.js';
import { WarehouseError, WarehouseReadAborted, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TEST_WAREHOUSE_REACH } from '../helpers/app.js';
import { availableWarehouseSources, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';

// Snowflake's stand-in speaks a subset of SQL; its connector has its own suite (snowflake-connector.test.ts).
const fixtures = availableWarehouseSources().filter((f) => f.type !== 'snowflake');

/** A statement that sleeps on the server, per source that has a server to cancel on. */
const SLEEP: Record<string, string> = { postgres: 'SELECT pg_sleep(30) AS s', redshift: 'SELECT pg_sleep(30) AS s', mysql: 'SELECT SLEEP(30) AS s' };
/** A query whose first row never comes: the server sleeps, or SQLite counts an endless recursive CTE in native code. */
const ENDLESS: Record<string, string> = {
  ...SLEEP,
  sqlite: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS n FROM c ORDER BY x DESC',
};
/** A connection string that reaches the server with a wrong password or database. */
const BAD_LOGIN: Record<string, [Record<string, unknown>, RegExp]> = {
  postgres: [{ connection_string: 'postgres://postgres@127.0.0.1:5432/no_such_database_here' }, /does not exist/],
  mysql: [{ connection_string: 'mysql://nobody:wrong-password@127.0.0.1:3306/nothing' }, /wrong user name or password/],
  redshift: [{ connection_string: 'postgres://postgres@127.0.0.1:5432/no_such_database_here' }, /cannot connect to Redshift: .*does not exist/],
};
/**
 * Sources whose query schemas say nothing about nullability: BigQuery's and Databricks' result
 * schemas mark every column of a query nullable (a table's own schema keeps REQUIRED / NOT NULL).
 */
const QUERY_ALL_NULLABLE = new Set(['bigquery', 'databricks']);
const settings = configFrom(TEST_WAREHOUSE_REACH);

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
      { name: 'label', type: expect.stringMatching(/^(text|string)$/), nullable: true },
    ]);
    const q = await c.describe({ query: `SELECT label AS l, n, n + 1 AS m FROM ${src.tableRef('nums')}` });
    expect(q.map((x) => [x.name, x.nullable])).toEqual([
      ['l', true],
      ['n', QUERY_ALL_NULLABLE.has(type)],
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
    // time_based reads from the watermark on (the rows at it again: dedupe knows them).
    const after = await collect(c.stream({ ...spec, after: { column: 'n', value: 2498 } }, ctx()));
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
    const write = type === 'sqlite' || type === 'mysql' ? `DELETE FROM nums RETURNING n` : `WITH d AS (DELETE FROM ${src.tableRef('nums')} RETURNING n) SELECT * FROM d`;
    await expect(collect(c.stream({ source: { query: write } }, ctx()))).rejects.toThrow();
    // count() too runs read-only (issue 18 finding 10).
    await expect(c.count!({ source: { query: write } }, ctx())).rejects.toThrow();
    expect(await c.count!({ source: { table: src.tableRef('nums') } }, ctx())).toBe(2500);
  });

  // Issue 18 finding 10: count() used to run outside the read-only transaction.
  it.runIf(type === 'postgres' || type === 'redshift')('every statement is read-only: count() and reads of a query that writes (nextval) fail', async () => {
    await src.exec('CREATE SEQUENCE seq_probe');
    const q = { source: { query: `SELECT nextval('${src.tableRef('seq_probe')}') AS v` } };
    await expect(c.count!(q, ctx())).rejects.toThrow(/read-only transaction/);
    await expect(collect(c.stream(q, ctx()))).rejects.toThrow(/read-only transaction/);
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

  // Sources with a server are told to cancel the statement; a SQLite source is read in-process,
  // and its abort is covered by the test above.
  it.runIf(SLEEP[type] !== undefined)('cancels a long-running statement on the server when aborted', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const read = collect(c.stream({ source: { query: SLEEP[type]! } }, { log: silentLogger, signal: ac.signal }));
    setTimeout(() => ac.abort(), 300);
    await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  // Issue 18 finding 3: a read that never answers is cancelled at the deadline and fails for good.
  it.runIf(ENDLESS[type] !== undefined)('a read beyond WAREHOUSE_READ_TIMEOUT_MS is cancelled and fails permanently, stream and count alike', async () => {
    const quick = createConnector(type, src.sourceBody().config, configFrom({ ...TEST_WAREHOUSE_REACH, WAREHOUSE_READ_TIMEOUT_MS: 700 }));
    const source = { query: ENDLESS[type]! };
    for (const read of [() => collect(quick.stream({ source }, ctx())), () => quick.count!({ source }, ctx())]) {
      const started = Date.now();
      const err = await read().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(WarehouseError);
      expect((err as WarehouseError).retryable).toBe(false);
      expect((err as Error).message).toMatch(/took longer than 700 ms \(WAREHOUSE_READ_TIMEOUT_MS\) and was cancelled/);
      expect(Date.now() - started).toBeLessThan(5000);
    }
    await quick.close();
    // The source still answers afterwards (the stuck statement or process is gone).
    expect(await c.count!({ source: { table: src.tableRef('nums') } }, ctx())).toBe(2500);
  });

  it('a connection test fails clearly on a bad source', async () => {
    const [config, message] = src.badLogin
      ? src.badLogin()
      : type === 'sqlite'
        ? [{ path: `${TEST_WAREHOUSE_REACH.WAREHOUSE_SQLITE_ALLOWED_DIRS}/nonexistent-dir/warehouse.sqlite` }, /SQLite file not found/]
        : BAD_LOGIN[type]!;
    await expect(createConnector(type, config, settings).test()).rejects.toThrow(message);
  });
});

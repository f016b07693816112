/**
 * The databricks connector (SQL Statement Execution API over fetch) against the REST stand-in
 * (test/databricks-standin): typed JSON_ARRAY values, result chunks fetched only as the consumer
 * reads, the latest row pushed down with QUALIFY, a TIMESTAMP watermark bound as a TIMESTAMP
 * parameter, catalog/schema, cancellation, and the errors a data engineer sees. The shared suites
 * (warehouse-connectors, warehouse-sync, warehouse-reach) also run on this stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector, definitions } from '../../connectors/index.js';
import { WarehouseReadAborted, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TEST_WAREHOUSE_REACH } from '../helpers/app.js';
import { createDatabricksFixture, DBX_NO_SELECT_TOKEN, DBX_NO_WAREHOUSE_TOKEN, type DatabricksFixture } from '../databricks-standin/standin-fixture.js';

const settings = configFrom(TEST_WAREHOUSE_REACH);
const ctx = (signal = new AbortController().signal) => ({ log: silentLogger, signal });

async function collect(it: AsyncIterable<Row>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of it) rows.push(r);
  return rows;
}

describe('databricks connector (stand-in)', () => {
  let fx: DatabricksFixture;
  let c: WarehouseConnector;
  const connectorFor = (config: Record<string, unknown>) => createConnector('databricks', definitions.databricks!.configSchema.parse(config), settings);

  beforeAll(async () => {
    fx = await createDatabricksFixture({ chunkRows: 400 });
    fx.createTable('typed', [
      { name: 'id', type: 'BIGINT', notNull: true },
      { name: 'big', type: 'BIGINT' },
      { name: 'price', type: 'DECIMAL(10,2)' },
      { name: 'ok', type: 'BOOLEAN' },
      { name: 'ts', type: 'TIMESTAMP' },
      { name: 'tags', type: 'ARRAY<STRING>' },
      { name: 'addr', type: 'STRUCT<city: STRING>' },
    ]);
    fx.insertRows('typed', [
      { id: 1, big: 9007199254740993n, price: 12.5, ok: true, ts: new Date('2024-05-01T12:00:00.123Z'), tags: ['x', 'y'], addr: { city: 'Oslo' } },
      { id: 2, big: -5, price: null, ok: false, ts: null, tags: null, addr: null },
    ]);
    fx.createTable('nums', [{ name: 'n', type: 'BIGINT', notNull: true }]);
    fx.insertRows('nums', Array.from({ length: 1000 }, (_, i) => ({ n: i })));
    c = connectorFor(fx.sourceConfig());
  });
  afterAll(async () => {
    await c?.close();
    await fx?.close();
  });

  it('describes a table from information_schema (NOT NULL kept) and hands typed values over', async () => {
    await c.test();
    expect((await c.describe({ table: 'typed' })).map((x) => [x.name, x.type, x.nullable])).toEqual([
      ['id', 'bigint', false],
      ['big', 'bigint', true],
      ['price', 'decimal(10,2)', true],
      ['ok', 'boolean', true],
      ['ts', 'timestamp', true],
      ['tags', 'array<string>', true],
      ['addr', 'struct<city: string>', true],
    ]);
    const rows = await collect(c.stream({ source: { table: 'main.analytics.typed' }, orderBy: ['id'] }, ctx()));
    expect(rows).toEqual([
      { id: 1, big: '9007199254740993', price: 12.5, ok: true, ts: new Date('2024-05-01T12:00:00.123Z'), tags: ['x', 'y'], addr: { city: 'Oslo' } },
      { id: 2, big: -5, price: null, ok: false, ts: null, tags: null, addr: null },
    ]);
  });

  it('follows the chunk links one chunk at a time, and binds a typed watermark', async () => {
    await c.describe({ table: 'nums' });
    const mark = fx.standin.stats().chunks.length;
    let n = 0;
    for await (const _r of c.stream({ source: { table: 'nums' }, orderBy: ['n'] }, ctx())) if (++n === 10) break;
    expect(fx.standin.stats().chunks.length - mark).toBe(1);
    const all = await collect(c.stream({ source: { table: 'nums' }, orderBy: ['n'] }, ctx()));
    expect(all).toHaveLength(1000);
    await collect(c.stream({ source: { table: 'typed' }, after: { column: 'ts', value: '2024-01-01T00:00:00.000Z' } }, ctx()));
    const last = fx.standin.stats().statements.at(-1)!;
    expect(last.statement).toMatch(/`ts` >= :wh_after/);
    expect(last.parameters).toEqual([{ name: 'wh_after', value: '2024-01-01T00:00:00.000Z', type: 'TIMESTAMP' }]);
    expect(last).toMatchObject({ catalog: 'main', schema: 'analytics' });
  });

  it('cancels the statement when the read is aborted while it runs', async () => {
    const cancels = fx.standin.stats().cancels.length;
    fx.standin.setQueryDelay(30_000);
    try {
      const ac = new AbortController();
      const started = Date.now();
      const read = collect(c.stream({ source: { table: 'nums' } }, ctx(ac.signal)));
      setTimeout(() => ac.abort(), 500);
      await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
      expect(Date.now() - started).toBeLessThan(5000);
      await expect.poll(() => fx.standin.stats().cancels.length).toBe(cancels + 1);
    } finally {
      fx.standin.setQueryDelay(0);
    }
  });

  it('says what is wrong: a cluster http_path, a revoked token, no CAN USE, no SELECT, a missing table or catalog', async () => {
    const parsed = definitions.databricks!.configSchema.safeParse(fx.sourceConfig({ http_path: 'sql/protocolv1/o/123/0123-456-abc' }));
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toMatch(/http_path must name a SQL warehouse/);
    // A token with a line break inside is refused by name, never quoted back.
    const broken = definitions.databricks!.configSchema.safeParse(fx.sourceConfig({ token: 'dapiSECRET\nTOKEN-123' }));
    expect(broken.success).toBe(false);
    expect(JSON.stringify(broken.error?.issues)).toMatch(/token must not contain a control character/);
    expect(JSON.stringify(broken.error?.issues)).not.toMatch(/SECRET|TOKEN-123/);
    await expect(connectorFor(fx.sourceConfig({ token: 'dapi-nope' })).test()).rejects.toThrow(/Databricks refused the token \(Invalid access token\.\)/);
    await expect(connectorFor(fx.sourceConfig({ token: DBX_NO_WAREHOUSE_TOKEN })).test()).rejects.toThrow(/permission denied: .*CAN USE/);
    await expect(collect(connectorFor(fx.sourceConfig({ token: DBX_NO_SELECT_TOKEN })).stream({ source: { query: 'SELECT * FROM nums' } }, ctx()))).rejects.toThrow(
      /permission denied: \[INSUFFICIENT_PERMISSIONS\].*SELECT on the tables/,
    );
    await expect(c.describe({ table: 'missing' })).rejects.toThrow(/table not found: main\.analytics\.missing/);
    await expect(connectorFor(fx.sourceConfig({ catalog: 'nope' })).test()).rejects.toThrow(/catalog or schema not found: \[NO_SUCH_CATALOG_EXCEPTION\]/);
    await expect(connectorFor(fx.sourceConfig({ http_path: '/sql/1.0/warehouses/ffff' })).test()).rejects.toThrow(/not found: SQL warehouse ffff does not exist/);
  });
});

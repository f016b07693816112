/**
 * The mysql connector against the real MariaDB, as a SELECT-only user made by the fixture:
 * values (DATETIME/TIMESTAMP as UTC whatever the server's and this process's time zones, DECIMAL
 * as numbers, TINYINT(1) as booleans, BIGINT exact past 2^53, JSON, utf8mb4), reserved-word
 * column names through every read shape, and the session's read-only rule. The shared suites
 * (warehouse-connectors, warehouse-sync, warehouse-reach) cover the rest.
 */
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector } from '../../connectors/index.js';
import type { Row, WarehouseConnector } from '../../connectors/warehouse.js';
import { parseDateTime } from '../../src/domain/warehouse-values.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TEST_WAREHOUSE_REACH } from '../helpers/app.js';
import { mysqlSourceFixture, TEST_MYSQL_URL, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';

const ctx = () => ({ log: silentLogger, signal: new AbortController().signal });
async function collect(it: AsyncIterable<Row>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of it) rows.push(r);
  return rows;
}

// Conditional: needs MariaDB/MySQL; .ci/run starts MariaDB and sets TEST_MYSQL_URL, so CI always runs it.
describe.runIf(mysqlSourceFixture.available())('mysql source values and dialect', () => {
  let src: WarehouseSourceHandle;
  let c: WarehouseConnector;
  let admin: mysql.Connection;
  let globalTz: string;
  const processTz = process.env.TZ;

  beforeAll(async () => {
    admin = await mysql.createConnection({ uri: TEST_MYSQL_URL! });
    globalTz = ((await admin.query('SELECT @@GLOBAL.time_zone AS tz'))[0] as { tz: string }[])[0]!.tz;
    // Neither the server's zone nor ours may shift a value: both set away from UTC.
    await admin.query("SET GLOBAL time_zone = '+05:30'");
    process.env.TZ = 'America/Los_Angeles';
    src = await mysqlSourceFixture.create();
    await src.exec(`CREATE TABLE vals (
      id INT NOT NULL PRIMARY KEY, dt DATETIME(3) NOT NULL, ts TIMESTAMP(6) NULL, price DECIMAL(12,4), flag TINYINT(1), small TINYINT,
      big BIGINT, ubig BIGINT UNSIGNED, doc JSON, note VARCHAR(100) CHARACTER SET utf8mb4, \`order\` INT, \`key\` VARCHAR(10), \`select\` VARCHAR(10))`);
    await src.exec("SET time_zone = '+00:00'");
    await src.exec(`INSERT INTO vals VALUES
      (1, '2024-05-01 12:34:56.789', '2024-05-01 12:34:56.789123', 1234.5678, 1, 7, 9007199254740993, 18446744073709551615, '{"plan":"pro","n":{"a":1}}', 'héllo 👋 世界', 1, 'k1', 'a'),
      (2, '2024-05-02 00:00:00.000', NULL, -0.5, 0, -3, -42, 0, NULL, NULL, 2, 'k1', 'b'),
      (3, '2024-05-03 00:00:00.000', '2024-05-03 23:59:59.999000', NULL, NULL, NULL, NULL, NULL, '[]', '', 3, 'k2', 'c')`);
    c = createConnector('mysql', src.sourceBody().config, configFrom(TEST_WAREHOUSE_REACH));
  });
  afterAll(async () => {
    process.env.TZ = processTz;
    await admin?.query(`SET GLOBAL time_zone = '${globalTz ?? 'SYSTEM'}'`);
    await admin?.end();
    await c?.close();
    await src?.cleanup();
  });

  it('maps DATETIME/TIMESTAMP to UTC ms, DECIMAL, TINYINT(1), BIGINT, JSON and utf8mb4 exactly', async () => {
    const rows = await collect(c.stream({ source: { table: 'vals' }, orderBy: ['id'] }, ctx()));
    expect(rows[0]).toMatchObject({ id: 1, price: 1234.5678, flag: true, small: 7, big: '9007199254740993', ubig: '18446744073709551615', doc: { plan: 'pro', n: { a: 1 } }, note: 'héllo 👋 世界', order: 1, key: 'k1', select: 'a' });
    expect(parseDateTime(rows[0]!.dt as string)).toBe(Date.UTC(2024, 4, 1, 12, 34, 56, 789));
    expect(parseDateTime(rows[0]!.ts as string)).toBe(Date.UTC(2024, 4, 1, 12, 34, 56, 789));
    expect(rows[1]).toMatchObject({ price: -0.5, flag: false, small: -3, big: -42, ubig: 0, ts: null, doc: null, note: null });
    expect(parseDateTime(rows[2]!.ts as string)).toBe(Date.UTC(2024, 4, 3, 23, 59, 59, 999));
    expect(rows[2]).toMatchObject({ price: null, flag: null, doc: [], note: '' });
  });

  it('reserved-word columns work in every read shape: latest row per key, watermark, order, count', async () => {
    const latest = await collect(
      c.stream({ source: { table: 'vals' }, latestBy: { keyColumns: ['key'], orderColumn: 'order', tieBreak: ['select'] }, orderBy: ['key'], columns: ['key', 'order', 'select'] }, ctx()),
    );
    expect(latest).toEqual([
      { key: 'k1', order: 2, select: 'b' },
      { key: 'k2', order: 3, select: 'c' },
    ]);
    const after = await collect(c.stream({ source: { table: 'vals' }, after: { column: 'dt', value: '2024-05-01 12:34:56.789' }, orderBy: ['order'], columns: ['order'] }, ctx()));
    // At or after the watermark: the row whose dt is exactly it (to the millisecond) included.
    expect(after).toEqual([{ order: 1 }, { order: 2 }, { order: 3 }]);
    expect(await c.count!({ source: { query: 'SELECT `order` FROM vals WHERE `select` <> "a"' } }, ctx())).toBe(2);
    expect((await c.describe({ table: 'vals' })).map((x) => [x.name, x.type, x.nullable]).slice(0, 5)).toEqual([
      ['id', 'int(11)', false],
      ['dt', 'datetime(3)', false],
      ['ts', 'timestamp(6)', true],
      ['price', 'decimal(12,4)', true],
      ['flag', 'tinyint(1)', true],
    ]);
  });

  it('every statement runs in a read-only session: even with every grant, a locking read is refused (count included)', async () => {
    const url = new URL(src.sourceBody().config.connection_string as string);
    for (const host of ['%', 'localhost']) await src.exec(`GRANT ALL ON \`${url.pathname.slice(1)}\`.* TO '${url.username}'@'${host}'`);
    const locking = { source: { query: 'SELECT id FROM vals FOR UPDATE' } };
    await expect(c.count!(locking, ctx())).rejects.toThrow(/read-only for syncs: .*READ ONLY transaction/);
    await expect(collect(c.stream(locking, ctx()))).rejects.toThrow(/READ ONLY transaction/);
  });
});

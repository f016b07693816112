/**
 * Warehouse SOURCE fixtures for the connector's end-to-end tests: each fixture creates a real
 * source (a SQLite file, a fresh Postgres schema, …), makes tables with portable column types,
 * inserts rows, and cleans up. Suites run `describe.each(availableWarehouseSources())`.
 *
 * Adding a source type (e.g. Snowflake backed by a stand-in server): implement
 * WarehouseSourceFixture and push it onto `warehouseSourceFixtures` — every suite picks it up.
 * Values handed to insertRows: strings, numbers, booleans, null, Date (stored as the source's
 * timestamp type; SQLite: 'YYYY-MM-DD HH:MM:SS.sss' UTC text) and plain objects for `json`
 * columns (SQLite: JSON text; Postgres: jsonb).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { enableChangeTracking } from '../snowflake-standin/standin-changes.js';
import { createSnowflakeFixture } from '../snowflake-standin/standin-fixture.js';
import { bigquerySourceFixture, databricksSourceFixture } from './cloud-sources.js';
import { withSearchPath } from './db.js';

export type ColumnType = 'text' | 'integer' | 'real' | 'timestamp' | 'json' | 'boolean';

export interface TableSpec {
  name: string;
  columns: { name: string; type: ColumnType; notNull?: boolean }[];
}

export type SourceRow = Record<string, unknown>;

export interface WarehouseSourceHandle {
  type: string;
  /** The body of `POST /api/app/projects/{pid}/warehouse-sources`. */
  sourceBody(name?: string): { type: string; name: string; config: Record<string, unknown> };
  /** How an import names the table in `table_params.table`. */
  tableRef(table: string): string;
  createTable(spec: TableSpec): Promise<void>;
  insertRows(table: string, rows: SourceRow[]): Promise<void>;
  /** Runs a statement in the source's own SQL (setup that has no portable form). */
  exec(sql: string): Promise<void>;
  cleanup(): Promise<void>;
  /** Additive: a config that reaches the source with bad credentials, and the error `test()` must give. */
  badLogin?(): [Record<string, unknown>, RegExp];
  /** Additive: server config the app and worker need to reach this source (e.g. an allowed access URL). */
  serverConfig?: Record<string, string | number>;
  /** Additive: turns on the warehouse's change tracking for a table (Snowflake: CHANGE_TRACKING = TRUE), where the source has it. */
  enableChangeTracking?(table: string): Promise<void>;
}

export interface WarehouseSourceFixture {
  type: string;
  /** Whether this environment can run it (Postgres needs TEST_DATABASE_URL). */
  available(): boolean;
  create(): Promise<WarehouseSourceHandle>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

function sqliteTime(d: Date): string {
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

const SQLITE_TYPES: Record<ColumnType, string> = {
  text: 'TEXT',
  integer: 'INTEGER',
  real: 'REAL',
  timestamp: 'TEXT',
  json: 'TEXT',
  boolean: 'INTEGER',
};

export const sqliteSourceFixture: WarehouseSourceFixture = {
  type: 'sqlite',
  available: () => true,
  async create() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'warehouse-src-'));
    const file = path.join(dir, 'warehouse.sqlite');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    const types = new Map<string, Map<string, ColumnType>>();
    const cell = (type: ColumnType | undefined, v: unknown) => {
      if (v === null || v === undefined) return null;
      if (v instanceof Date) return sqliteTime(v);
      if (type === 'json' && typeof v === 'object') return JSON.stringify(v);
      if (typeof v === 'boolean') return v ? 1 : 0;
      return v;
    };
    return {
      type: 'sqlite',
      sourceBody: (name = 'sqlite warehouse') => ({ type: 'sqlite', name, config: { path: file } }),
      tableRef: (t) => t,
      async createTable(spec) {
        types.set(spec.name, new Map(spec.columns.map((c) => [c.name, c.type])));
        const cols = spec.columns.map((c) => `${quote(c.name)} ${SQLITE_TYPES[c.type]}${c.notNull ? ' NOT NULL' : ''}`);
        db.exec(`CREATE TABLE ${quote(spec.name)} (${cols.join(', ')})`);
      },
      async insertRows(table, rows) {
        if (rows.length === 0) return;
        const colTypes = types.get(table)!;
        const names = [...colTypes.keys()];
        const stmt = db.prepare(`INSERT INTO ${quote(table)} (${names.map(quote).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
        db.transaction(() => {
          for (const r of rows) stmt.run(...names.map((n) => cell(colTypes.get(n), r[n])));
        })();
      },
      async exec(sql) {
        db.exec(sql);
      },
      async cleanup() {
        db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const PG_TYPES: Record<ColumnType, string> = {
  text: 'text',
  integer: 'bigint',
  real: 'double precision',
  timestamp: 'timestamp',
  json: 'jsonb',
  boolean: 'boolean',
};

export const postgresSourceFixture: WarehouseSourceFixture = {
  type: 'postgres',
  available: () => Boolean(process.env.TEST_DATABASE_URL),
  async create() {
    const base = process.env.TEST_DATABASE_URL!;
    const schema = `wh_${crypto.randomBytes(5).toString('hex')}`;
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`SET search_path TO ${schema}`);
    await client.query("SET TIME ZONE 'UTC'");
    const types = new Map<string, Map<string, ColumnType>>();
    const cell = (type: ColumnType | undefined, v: unknown) => {
      if (v === null || v === undefined) return null;
      if (v instanceof Date) return v.toISOString().replace('Z', '');
      if (type === 'json') return JSON.stringify(v);
      return v;
    };
    return {
      type: 'postgres',
      sourceBody: (name = 'postgres warehouse') => ({ type: 'postgres', name, config: { connection_string: withSearchPath(base, schema) } }),
      tableRef: (t) => `${schema}.${t}`,
      async createTable(spec) {
        types.set(spec.name, new Map(spec.columns.map((c) => [c.name, c.type])));
        const cols = spec.columns.map((c) => `${quote(c.name)} ${PG_TYPES[c.type]}${c.notNull ? ' NOT NULL' : ''}`);
        await client.query(`CREATE TABLE ${quote(spec.name)} (${cols.join(', ')})`);
      },
      async insertRows(table, rows) {
        const colTypes = types.get(table)!;
        const names = [...colTypes.keys()];
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const params: unknown[] = [];
          const tuples = chunk.map((r) => `(${names.map((n) => (params.push(cell(colTypes.get(n), r[n])), `$${params.length}`)).join(', ')})`);
          await client.query(`INSERT INTO ${quote(table)} (${names.map(quote).join(', ')}) VALUES ${tuples.join(', ')}`, params);
        }
      },
      async exec(sql) {
        await client.query(sql);
      },
      async cleanup() {
        await client.query(`DROP SCHEMA ${schema} CASCADE`);
        await client.end();
      },
    };
  },
};

const SNOWFLAKE_TYPES: Record<ColumnType, string> = {
  text: 'VARCHAR',
  integer: 'NUMBER(38,0)',
  real: 'FLOAT',
  timestamp: 'TIMESTAMP_NTZ',
  json: 'VARIANT',
  boolean: 'BOOLEAN',
};

/**
 * Snowflake through the real snowflake-sdk, against the protocol stand-in (test/snowflake-standin)
 * whose tables live in a SQLite file with Snowflake column types. `exec` runs SQLite SQL on that
 * file; the stand-in's origin must be allowed as access_url, hence `serverConfig`.
 */
export const snowflakeSourceFixture: WarehouseSourceFixture = {
  type: 'snowflake',
  available: () => true,
  async create() {
    const fx = await createSnowflakeFixture({ inlineRows: 2, chunkRows: 3 });
    const types = new Map<string, Map<string, ColumnType>>();
    const cell = (type: ColumnType | undefined, v: unknown) => {
      if (v === null || v === undefined) return null;
      if (v instanceof Date) return v.toISOString();
      if (type === 'json') return JSON.stringify(v);
      if (typeof v === 'boolean') return v ? 1 : 0;
      return v;
    };
    return {
      type: 'snowflake',
      serverConfig: fx.serverConfig,
      sourceBody: (name = 'snowflake warehouse') => ({ type: 'snowflake', name, config: fx.sourceConfig() }),
      tableRef: (t) => `ANALYTICS.PUBLIC.${t}`,
      async createTable(spec) {
        types.set(spec.name, new Map(spec.columns.map((c) => [c.name, c.type])));
        const cols = spec.columns.map((c) => `${quote(c.name)} ${SNOWFLAKE_TYPES[c.type]}${c.notNull ? ' NOT NULL' : ''}`);
        fx.db.exec(`CREATE TABLE ${quote(spec.name)} (${cols.join(', ')})`);
      },
      async insertRows(table, rows) {
        if (rows.length === 0) return;
        const colTypes = types.get(table)!;
        const names = [...colTypes.keys()];
        const stmt = fx.db.prepare(`INSERT INTO ${quote(table)} (${names.map(quote).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
        fx.db.transaction(() => {
          for (const r of rows) stmt.run(...names.map((n) => cell(colTypes.get(n), r[n])));
        })();
      },
      async exec(sql) {
        fx.db.exec(sql);
      },
      async enableChangeTracking(table) {
        enableChangeTracking(fx.db, table);
      },
      async cleanup() {
        await fx.close();
      },
    };
  },
};

const MYSQL_TYPES: Record<ColumnType, string> = {
  text: 'TEXT',
  integer: 'BIGINT',
  real: 'DOUBLE',
  timestamp: 'DATETIME(6)',
  json: 'JSON',
  boolean: 'TINYINT(1)',
};

/** MariaDB/MySQL admin URL (root) the fixture creates its database and SELECT-only user with. */
export const TEST_MYSQL_URL = process.env.TEST_MYSQL_URL;

/**
 * MySQL/MariaDB: a fresh database and a user granted SELECT on it only (the grant the README asks
 * of users), both dropped at cleanup. `exec` runs MySQL SQL as the admin in that database.
 */
export const mysqlSourceFixture: WarehouseSourceFixture = {
  type: 'mysql',
  available: () => Boolean(TEST_MYSQL_URL),
  async create() {
    const suffix = crypto.randomBytes(5).toString('hex');
    const database = `wh_${suffix}`;
    const user = `wh_reader_${suffix}`;
    const password = `pw-${crypto.randomBytes(8).toString('hex')}`;
    const admin = await mysql.createConnection({ uri: TEST_MYSQL_URL!, charset: 'UTF8MB4_UNICODE_CI', timezone: 'Z' });
    await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
    await admin.query(`CREATE USER '${user}'@'localhost' IDENTIFIED BY '${password}'`);
    await admin.query(`GRANT SELECT ON \`${database}\`.* TO '${user}'@'%'`);
    await admin.query(`GRANT SELECT ON \`${database}\`.* TO '${user}'@'localhost'`);
    await admin.query(`USE \`${database}\``);
    await admin.query("SET time_zone = '+00:00'");
    const bq = (name: string) => `\`${name.replace(/`/g, '``')}\``;
    const types = new Map<string, Map<string, ColumnType>>();
    const cell = (type: ColumnType | undefined, v: unknown) => {
      if (v === null || v === undefined) return null;
      if (v instanceof Date) return v.toISOString().replace('T', ' ').replace('Z', '');
      if (type === 'json') return JSON.stringify(v);
      if (typeof v === 'boolean') return v ? 1 : 0;
      return v;
    };
    const url = new URL(TEST_MYSQL_URL!);
    return {
      type: 'mysql',
      sourceBody: (name = 'mysql warehouse') => ({
        type: 'mysql',
        name,
        config: { connection_string: `mysql://${user}:${password}@${url.hostname}:${url.port || 3306}/${database}` },
      }),
      tableRef: (t) => t,
      async createTable(spec) {
        types.set(spec.name, new Map(spec.columns.map((c) => [c.name, c.type])));
        const cols = spec.columns.map((c) => `${bq(c.name)} ${MYSQL_TYPES[c.type]}${c.notNull ? ' NOT NULL' : ' NULL'}`);
        await admin.query(`CREATE TABLE ${bq(spec.name)} (${cols.join(', ')})`);
      },
      async insertRows(table, rows) {
        const colTypes = types.get(table)!;
        const names = [...colTypes.keys()];
        for (let i = 0; i < rows.length; i += 1000) {
          const chunk = rows.slice(i, i + 1000).map((r) => names.map((n) => cell(colTypes.get(n), r[n])));
          await admin.query(`INSERT INTO ${bq(table)} (${names.map(bq).join(', ')}) VALUES ?`, [chunk]);
        }
      },
      async exec(sql) {
        await admin.query(sql);
      },
      async cleanup() {
        await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
        await admin.query(`DROP USER IF EXISTS '${user}'@'%'`);
        await admin.query(`DROP USER IF EXISTS '${user}'@'localhost'`);
        await admin.end();
      },
    };
  },
};

/**
 * Redshift mode: a `redshift` source (the Redshift flavor of the connector: its dialect, its
 * catalog fallbacks, no session characteristics) against a real PostgreSQL schema, since Redshift
 * speaks the PostgreSQL protocol and none runs here. Redshift-only SQL is unit-tested
 * (test/unit/redshift-sql.test.ts).
 */
export const redshiftSourceFixture: WarehouseSourceFixture = {
  type: 'redshift',
  available: postgresSourceFixture.available,
  async create() {
    const pgHandle = await postgresSourceFixture.create();
    return {
      ...pgHandle,
      type: 'redshift',
      sourceBody: (name = 'redshift warehouse') => ({ ...pgHandle.sourceBody(name), type: 'redshift' }),
    };
  },
};

/** Every source fixture; a new source type adds itself here. */
export const warehouseSourceFixtures: WarehouseSourceFixture[] = [sqliteSourceFixture, postgresSourceFixture, snowflakeSourceFixture, mysqlSourceFixture, redshiftSourceFixture, bigquerySourceFixture, databricksSourceFixture];

export function availableWarehouseSources(): WarehouseSourceFixture[] {
  return warehouseSourceFixtures.filter((f) => f.available());
}

/**
 * Table `ev` with `rows` generated event rows (id, event, ts in ms, user_id, url), made inside the
 * source by one statement in its own SQL (seconds, not minutes, for 500k rows).
 */
export async function fillEventsTable(src: WarehouseSourceHandle, rows: number): Promise<void> {
  await src.createTable({
    name: 'ev',
    columns: [
      { name: 'id', type: 'integer', notNull: true },
      { name: 'event', type: 'text', notNull: true },
      { name: 'ts', type: 'integer', notNull: true },
      { name: 'user_id', type: 'text' },
      { name: 'url', type: 'text' },
    ],
  });
  const ev = src.tableRef('ev');
  // The cloud stand-ins keep their tables in SQLite too (`exec` runs SQLite SQL on that file).
  if (src.type === 'sqlite' || src.type === 'bigquery' || src.type === 'databricks') {
    await src.exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows - 1})
      INSERT INTO ev SELECT i, 'event_' || (i % 7), 1704067200000 + i * 1000, 'user-' || (i % 5000), '/p/' || (i % 97) FROM c`);
  } else if (src.type === 'postgres' || src.type === 'redshift') {
    await src.exec(`INSERT INTO ${ev} SELECT i, 'event_' || (i % 7), 1704067200000 + i * 1000, 'user-' || (i % 5000), '/p/' || (i % 97) FROM generate_series(0, ${rows - 1}) AS i`);
  } else if (src.type === 'mysql') {
    // MariaDB's SEQUENCE engine: seq_0_to_N is a table of N + 1 integers.
    await src.exec(`INSERT INTO ev SELECT seq, CONCAT('event_', seq % 7), 1704067200000 + seq * 1000, CONCAT('user-', seq % 5000), CONCAT('/p/', seq % 97) FROM seq_0_to_${rows - 1}`);
  } else throw new Error(`fillEventsTable: no bulk fill for ${src.type}`);
}

/** The events import of `fillEventsTable`'s table (on a source whose tableRef('ev') is `ev`; else override table_params). */
export const EV_EVENTS_IMPORT = {
  import_type: 'events',
  table_params: { table: 'ev' },
  sync_mode: 'full_sync',
  schedule: 'api_only',
  event_column_name: 'event',
  time_column_name: 'ts',
  user_column_name: 'user_id',
} as const;

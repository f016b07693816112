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
import pg from 'pg';
import { createSnowflakeFixture } from '../snowflake-standin/standin-fixture.js';
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
  /** Additive: server config the app and worker need to reach this source (e.g. an allowed access URL). */
  serverConfig?: Record<string, string | number>;
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
      async cleanup() {
        await fx.close();
      },
    };
  },
};

/** Every source fixture; a new source type adds itself here. */
export const warehouseSourceFixtures: WarehouseSourceFixture[] = [sqliteSourceFixture, postgresSourceFixture, snowflakeSourceFixture];

export function availableWarehouseSources(): WarehouseSourceFixture[] {
  return warehouseSourceFixtures.filter((f) => f.available());
}

/**
 * A Databricks stand-in ready for tests: a temp SQLite file for tables (create them with
 * Databricks column types: BIGINT, STRING, DOUBLE, BOOLEAN, TIMESTAMP, ARRAY<…>, STRUCT<…>), the
 * stand-in serving it, tokens for a reader, a user without CAN USE and a user without SELECT, and
 * the source config that points a databricks source at it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { storedTime } from '../bigquery-standin/standin-wire.js';
import { COLUMNS_TABLE, startDatabricksStandin, type DatabricksStandinHandle, type DatabricksStandinOptions } from './standin.server.js';

export const DBX_TOKEN = 'dapi-standin-reader-0123456789';
export const DBX_NO_WAREHOUSE_TOKEN = 'dapi-standin-no-warehouse';
export const DBX_NO_SELECT_TOKEN = 'dapi-standin-no-select';
export const DBX_WAREHOUSE = 'a1b2c3d4e5f60718';

export interface DatabricksColumn {
  name: string;
  /** BIGINT, INT, STRING, DOUBLE, DECIMAL(10,2), BOOLEAN, TIMESTAMP, DATE, ARRAY<…>, STRUCT<…>, MAP<…> */
  type: string;
  notNull?: boolean;
}

export interface DatabricksFixture {
  standin: DatabricksStandinHandle;
  db: Database.Database;
  sourceConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  createTable(name: string, columns: DatabricksColumn[]): void;
  insertRows(name: string, rows: Record<string, unknown>[]): void;
  close(): Promise<void>;
}

const AFFINITY: Record<string, string> = { BIGINT: 'INTEGER', INT: 'INTEGER', SMALLINT: 'INTEGER', TINYINT: 'INTEGER', BOOLEAN: 'INTEGER', DOUBLE: 'REAL', FLOAT: 'REAL' };

function stored(type: string, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return type === 'DATE' ? v.toISOString().slice(0, 10) : storedTime(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'object') return JSON.stringify(v);
  return v;
}

export async function createDatabricksFixture(opts: Partial<Pick<DatabricksStandinOptions, 'chunkRows' | 'maxWaitMs'>> = {}): Promise<DatabricksFixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dbx-standin-'));
  const dbPath = path.join(dir, 'warehouse.sqlite');
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  const standin = await startDatabricksStandin({
    dbPath,
    warehouseId: DBX_WAREHOUSE,
    catalog: 'main',
    schema: 'analytics',
    users: [
      { token: DBX_TOKEN, name: 'loader@example.com' },
      { token: DBX_NO_WAREHOUSE_TOKEN, name: 'nowh@example.com', canUseWarehouse: false },
      { token: DBX_NO_SELECT_TOKEN, name: 'nosel@example.com', canSelect: false },
    ],
    chunkRows: opts.chunkRows,
    maxWaitMs: opts.maxWaitMs ?? 200,
  });
  const types = new Map<string, DatabricksColumn[]>();
  return {
    standin,
    db,
    sourceConfig: (overrides = {}) => {
      const base: Record<string, unknown> = {
        host: 'dbc-standin.cloud.databricks.com',
        http_path: `/sql/1.0/warehouses/${DBX_WAREHOUSE}`,
        token: DBX_TOKEN,
        catalog: 'main',
        schema: 'analytics',
        api_endpoint: standin.url,
      };
      for (const [k, v] of Object.entries(overrides)) {
        if (v === undefined) delete base[k];
        else base[k] = v;
      }
      return base;
    },
    createTable: (name, columns) => {
      const cols = columns.map((c) => `"${c.name}" ${AFFINITY[c.type.toUpperCase()] ?? 'TEXT'}${c.notNull ? ' NOT NULL' : ''}`);
      db.exec(`CREATE TABLE "${name}" (${cols.join(', ')})`);
      const ins = db.prepare(`INSERT INTO ${COLUMNS_TABLE} (table_name, column_name, ordinal_position, data_type, is_nullable) VALUES (?, ?, ?, ?, ?)`);
      columns.forEach((c, i) => ins.run(name, c.name, i + 1, c.type.toUpperCase(), c.notNull ? 'NO' : 'YES'));
      types.set(name, columns);
    },
    insertRows: (name, rows) => {
      if (rows.length === 0) return;
      const cols = types.get(name)!;
      const stmt = db.prepare(`INSERT INTO "${name}" (${cols.map((c) => `"${c.name}"`).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
      db.transaction(() => {
        for (const r of rows) stmt.run(...cols.map((c) => stored(c.type.toUpperCase(), r[c.name])));
      })();
    },
    close: async () => {
      await standin.close();
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Source fixtures for the cloud warehouses (BigQuery, Databricks): each is a protocol stand-in
 * whose tables live in a SQLite file, reached through the real client library. They plug into
 * `warehouseSourceFixtures` (warehouse-sources.ts), so the shared connector and sync suites run on
 * them. `exec` runs SQLite SQL on the stand-in's file.
 */
import { enableChangeTracking } from '../snowflake-standin/standin-changes.js';
import type Database from 'better-sqlite3';
import { createBigQueryFixture, rsaKeyPair } from '../bigquery-standin/standin-fixture.js';
import { SCHEMA_TABLE, type Field } from '../bigquery-standin/standin-wire.js';
import { COLUMNS_TABLE } from '../databricks-standin/standin.server.js';
import { createDatabricksFixture } from '../databricks-standin/standin-fixture.js';
import type { ColumnType, WarehouseSourceFixture } from './warehouse-sources.js';

const BIGQUERY_TYPES: Record<ColumnType, string> = {
  text: 'STRING',
  integer: 'INTEGER',
  real: 'FLOAT',
  timestamp: 'TIMESTAMP',
  json: 'JSON',
  boolean: 'BOOLEAN',
};

/** BigQuery through @google-cloud/bigquery against the REST stand-in; tables are named `dataset.table`. */
export const bigquerySourceFixture: WarehouseSourceFixture = bigqueryFixtureWith(3);

/** The BigQuery fixture with `pageRows` rows a page (3 for the suites: every read crosses pages; more for big tables). */
export function bigqueryFixtureWith(pageRows: number): WarehouseSourceFixture {
  return {
  type: 'bigquery',
  available: () => true,
  async create() {
    const fx = await createBigQueryFixture({ pageRows });
    return {
      type: 'bigquery',
      sourceBody: (name = 'bigquery warehouse') => ({ type: 'bigquery', name, config: fx.sourceConfig() }),
      tableRef: (t) => `analytics.${t}`,
      badLogin: () => [
        fx.sourceConfig({ credentials_json: fx.key(undefined, rsaKeyPair().privateKeyPem) }),
        /service-account key was refused .*Invalid JWT Signature/,
      ],
      async createTable(spec) {
        fx.createTable(
          spec.name,
          spec.columns.map((c) => ({ name: c.name, type: BIGQUERY_TYPES[c.type], mode: c.notNull ? 'REQUIRED' : 'NULLABLE' })),
        );
      },
      async insertRows(table, rows) {
        fx.insertRows(table, rows);
      },
      async exec(sql) {
        standinDdl(fx.db, sql, {
          relax: (table, column) => {
            const row = fx.db.prepare(`SELECT fields FROM ${SCHEMA_TABLE} WHERE table_name = ?`).get(table) as { fields: string } | undefined;
            const fields = (JSON.parse(row!.fields) as Field[]).map((f) => (f.name === column ? { ...f, mode: 'NULLABLE' as const } : f));
            fx.db.prepare(`UPDATE ${SCHEMA_TABLE} SET fields = ? WHERE table_name = ?`).run(JSON.stringify(fields), table);
          },
          reconcile: () => {
            for (const { table_name, fields } of fx.db.prepare(`SELECT table_name, fields FROM ${SCHEMA_TABLE}`).all() as { table_name: string; fields: string }[]) {
              const present = sqliteColumns(fx.db, table_name);
              if (present.size === 0) fx.db.prepare(`DELETE FROM ${SCHEMA_TABLE} WHERE table_name = ?`).run(table_name);
              else fx.db.prepare(`UPDATE ${SCHEMA_TABLE} SET fields = ? WHERE table_name = ?`).run(JSON.stringify((JSON.parse(fields) as Field[]).filter((f) => present.has(f.name))), table_name);
            }
          },
        });
      },
      async cleanup() {
        await fx.close();
      },
    };
  },
  };
}

const DATABRICKS_TYPES: Record<ColumnType, string> = {
  text: 'STRING',
  integer: 'BIGINT',
  real: 'DOUBLE',
  timestamp: 'TIMESTAMP',
  json: 'STRING',
  boolean: 'BOOLEAN',
};

/**
 * Databricks through the SQL Statement Execution API against the REST stand-in; tables are named
 * `schema.table` (the source's catalog is `main`). JSON columns are STRING holding JSON text, as
 * Databricks tables usually keep them.
 */
export const databricksSourceFixture: WarehouseSourceFixture = databricksFixtureWith(3);

/** The Databricks fixture with `chunkRows` rows a chunk (3 for the suites: every read follows chunk links). */
export function databricksFixtureWith(chunkRows: number): WarehouseSourceFixture {
  return {
  type: 'databricks',
  available: () => true,
  async create() {
    const fx = await createDatabricksFixture({ chunkRows });
    return {
      type: 'databricks',
      sourceBody: (name = 'databricks warehouse') => ({ type: 'databricks', name, config: fx.sourceConfig() }),
      tableRef: (t) => `analytics.${t}`,
      badLogin: () => [fx.sourceConfig({ token: 'dapi-revoked-token' }), /Databricks refused the token \(Invalid access token\.\)/],
      async createTable(spec) {
        fx.createTable(
          spec.name,
          spec.columns.map((c) => ({ name: c.name, type: DATABRICKS_TYPES[c.type], notNull: c.notNull })),
        );
      },
      async insertRows(table, rows) {
        fx.insertRows(table, rows);
      },
      async enableChangeTracking(table) {
        enableChangeTracking(fx.db, table);
      },
      async exec(sql) {
        standinDdl(fx.db, sql, {
          relax: (table, column) => fx.db.prepare(`UPDATE ${COLUMNS_TABLE} SET is_nullable = 'YES' WHERE table_name = ? AND column_name = ?`).run(table, column),
          reconcile: () => {
            for (const { table_name, column_name } of fx.db.prepare(`SELECT table_name, column_name FROM ${COLUMNS_TABLE}`).all() as { table_name: string; column_name: string }[]) {
              if (!sqliteColumns(fx.db, table_name).has(column_name)) fx.db.prepare(`DELETE FROM ${COLUMNS_TABLE} WHERE table_name = ? AND column_name = ?`).run(table_name, column_name);
            }
          },
        });
      },
      async cleanup() {
        await fx.close();
      },
    };
  },
  };
}

function sqliteColumns(db: Database.Database, table: string): Set<string> {
  return new Set((db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[]).map((r) => r.name));
}

/**
 * `exec` on a cloud stand-in: SQLite SQL on its file, with the suites' portable DDL made to work —
 * `analytics.` (the dataset / schema prefix of tableRef) dropped, `ALTER … DROP NOT NULL` applied
 * to the stand-in's schema (BigQuery's REQUIRED → NULLABLE relaxation; a Databricks column made
 * nullable), and the stand-in's schema brought in line after columns or tables were dropped.
 */
function standinDdl(db: Database.Database, sql: string, how: { relax: (table: string, column: string) => void; reconcile: () => void }): void {
  const text = sql.replace(/\banalytics\./g, '');
  const relax = /^\s*ALTER TABLE "?(\w+)"? ALTER COLUMN "?(\w+)"? DROP NOT NULL\s*;?\s*$/i.exec(text);
  if (relax) return how.relax(relax[1]!, relax[2]!);
  db.exec(text);
  how.reconcile();
}

/**
 * The Databricks SQL dialect of the backtick read builder (backtick-sql.ts): a table name's parts
 * each quoted (unqualified names resolve in the statement's `catalog` / `schema`), the watermark
 * a typed named parameter marker (`:wh_after`), TO_JSON for tie-breaks on complex columns, and
 * `LIMIT ALL OFFSET n`.
 */
import { buildCountSql as countSql, buildReadSql as readSql, isoInstant, quoteIdent, type BacktickDialect, type BuiltSql } from '../backtick-sql.js';
import { splitTableName } from '../sql-builder.js';
import { WarehouseError, type ColumnInfo, type ReadSpec } from '../warehouse.js';

/** A statement parameter as the Statement Execution API takes it. */
export interface StatementParameter {
  name: string;
  value: string;
  type: string;
}

export type DatabricksSql = BuiltSql<StatementParameter>;

/** `catalog.schema.table`, `schema.table` or `table` → its parts (backticks in the user's text removed). */
export function tableParts(table: string): string[] {
  return splitTableName(table.replaceAll('`', ''));
}

export function afterParameter(value: string | number, type: string | undefined): StatementParameter {
  const t = (type ?? '').toLowerCase();
  const typed = (pt: string, v: string): StatementParameter => ({ name: 'wh_after', value: v, type: pt });
  if (t === 'timestamp' || t === 'timestamp_ntz') return typed(t.toUpperCase(), isoInstant(value).replace('Z', t === 'timestamp' ? 'Z' : ''));
  if (t === 'date') return typed('DATE', isoInstant(value).slice(0, 10));
  if (/^(bigint|int|smallint|tinyint|long|short|byte)$/.test(t)) return typed('BIGINT', String(value));
  if (/^(double|float|decimal)/.test(t)) return typed(t.startsWith('decimal') ? t.toUpperCase() : 'DOUBLE', String(value));
  return typed(typeof value === 'number' ? 'DOUBLE' : 'STRING', String(value));
}

export const DATABRICKS_DIALECT: BacktickDialect<StatementParameter> = {
  table: (name) => tableParts(name).map(quoteIdent).join('.'),
  afterMarker: ':wh_after',
  afterParameter,
  asText: (col, type) => (type && /^(array|map|struct)/.test(type) ? `TO_JSON(${col})` : `CAST(${col} AS STRING)`),
  offset: (n) => `LIMIT ALL OFFSET ${n}`,
};

/** The warehouse's clock as epoch milliseconds: a change point (see buildChangesSql). */
export const CHANGE_POINT_SQL: DatabricksSql = { query: 'SELECT unix_millis(current_timestamp()) AS now_ms', params: [] };

/**
 * The change data feed of a table since a change point (the table needs
 * delta.enableChangeDataFeed = true): `table_changes` gives every change — an update as an
 * update_preimage and an update_postimage row — so only the last change of each key is kept
 * (by `_commit_version`, a postimage over its preimage), ordered by the key.
 */
export function buildChangesSql(spec: ReadSpec, columns: readonly ColumnInfo[], since: number, keyColumn: string): DatabricksSql {
  if (!('table' in spec.source)) throw new WarehouseError('the change data feed reads a table, not a query');
  const known = new Set(columns.map((c) => c.name));
  const names = spec.columns && spec.columns.length > 0 ? spec.columns : columns.map((c) => c.name);
  for (const n of [...names, keyColumn]) if (!known.has(n)) throw new WarehouseError(`column ${JSON.stringify(n)} is not in the source`);
  const key = quoteIdent(keyColumn);
  const table = tableParts(spec.source.table).join('.').replaceAll("'", "''");
  return {
    query:
      `SELECT ${names.map(quoteIdent).join(', ')}, \`_change_type\` FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ${key} ` +
      `ORDER BY \`_commit_version\` DESC, CASE WHEN \`_change_type\` = 'update_preimage' THEN 1 ELSE 0 END) AS \`__rn\` ` +
      `FROM table_changes('${table}', :cdf_since)) AS \`__c\` WHERE \`__rn\` = 1 ORDER BY ${key}`,
    params: [{ name: 'cdf_since', value: isoInstant(since), type: 'TIMESTAMP' }],
  };
}

export const buildReadSql = (spec: ReadSpec, columns: readonly ColumnInfo[]): DatabricksSql => readSql(spec, columns, DATABRICKS_DIALECT);
export const buildCountSql = (spec: ReadSpec, columns: readonly ColumnInfo[]): DatabricksSql => countSql(spec, columns, DATABRICKS_DIALECT);

/**
 * The Databricks SQL dialect of the backtick read builder (backtick-sql.ts): a table name's parts
 * each quoted (unqualified names resolve in the statement's `catalog` / `schema`), the watermark
 * a typed named parameter marker (`:wh_after`), TO_JSON for tie-breaks on complex columns, and
 * `LIMIT ALL OFFSET n`.
 */
import { buildCountSql as countSql, buildReadSql as readSql, isoInstant, quoteIdent, type BacktickDialect, type BuiltSql } from '../backtick-sql.js';
import { splitTableName } from '../sql-builder.js';
import type { ColumnInfo, ReadSpec } from '../warehouse.js';

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

export const buildReadSql = (spec: ReadSpec, columns: readonly ColumnInfo[]): DatabricksSql => readSql(spec, columns, DATABRICKS_DIALECT);
export const buildCountSql = (spec: ReadSpec, columns: readonly ColumnInfo[]): DatabricksSql => countSql(spec, columns, DATABRICKS_DIALECT);

/**
 * The GoogleSQL dialect of the backtick read builder (backtick-sql.ts): table names qualified
 * with the source's project and dataset, the watermark a typed NAMED query parameter
 * (`@wh_after`), TO_JSON_STRING for tie-breaks on structured columns, and
 * `LIMIT 9223372036854775807 OFFSET n` (BigQuery has no OFFSET without LIMIT).
 */
import { buildCountSql as countSql, buildReadSql as readSql, isoInstant, quoteIdent, type BacktickDialect, type BuiltSql } from '../backtick-sql.js';
import { splitTableName } from '../sql-builder.js';
import type { ColumnInfo, ReadSpec } from '../warehouse.js';

export interface QueryParameter {
  name: string;
  parameterType: { type: string };
  parameterValue: { value: string };
}

export type BigQuerySql = BuiltSql<QueryParameter>;

export interface Defaults {
  projectId: string;
  dataset: string;
}

/** `table`, `dataset.table` or `project.dataset.table`, filled in from the source's defaults. */
export function tablePath(table: string, d: Defaults): { projectId: string; datasetId: string; tableId: string } {
  const parts = splitTableName(table.replaceAll('`', ''));
  const [tableId] = parts.slice(-1) as [string];
  const datasetId = parts.length >= 2 ? parts[parts.length - 2]! : d.dataset;
  const projectId = parts.length === 3 ? parts[0]! : d.projectId;
  return { projectId, datasetId, tableId };
}

const LEGACY: Record<string, string> = { integer: 'int64', float: 'float64', boolean: 'bool', record: 'struct' };

/** A schema field's type as GoogleSQL names it (the REST schema still uses INTEGER, FLOAT, …), lower-case. */
export function standardType(field: { type?: string | null; mode?: string | null }): string {
  const t = (field.type ?? 'string').toLowerCase();
  const base = LEGACY[t] ?? t;
  return field.mode === 'REPEATED' ? `array<${base}>` : base;
}

/** The watermark bound with the column's own type, so `ts > @wh_after` compares timestamps, not text. */
export function afterParameter(value: string | number, type: string | undefined): QueryParameter {
  const t = (type ?? '').toLowerCase();
  const typed = (pt: string, v: string): QueryParameter => ({ name: 'wh_after', parameterType: { type: pt }, parameterValue: { value: v } });
  switch (t) {
    case 'timestamp':
      return typed('TIMESTAMP', isoInstant(value).replace('T', ' ').replace('Z', '+00:00'));
    case 'datetime':
      return typed('DATETIME', isoInstant(value).replace('T', ' ').replace('Z', ''));
    case 'date':
      return typed('DATE', isoInstant(value).slice(0, 10));
    case 'int64':
    case 'float64':
    case 'numeric':
    case 'bignumeric':
      return typed(t.toUpperCase(), String(value));
    default:
      return typed(typeof value === 'number' ? 'FLOAT64' : 'STRING', String(value));
  }
}

// Compared as text in the tie-break: CAST works for scalars; structured values need TO_JSON_STRING.
const NOT_CASTABLE = /^(array<|struct|json|geography|range)/;

export function googleSqlDialect(d: Defaults): BacktickDialect<QueryParameter> {
  return {
    table: (name) => {
      const p = tablePath(name, d);
      return [p.projectId, p.datasetId, p.tableId].map(quoteIdent).join('.');
    },
    afterMarker: '@wh_after',
    afterParameter,
    asText: (col, type) => (type && NOT_CASTABLE.test(type) ? `TO_JSON_STRING(${col})` : `CAST(${col} AS STRING)`),
    offset: (n) => `LIMIT 9223372036854775807 OFFSET ${n}`,
  };
}

export const buildReadSql = (spec: ReadSpec, columns: readonly ColumnInfo[], d: Defaults): BigQuerySql => readSql(spec, columns, googleSqlDialect(d));
export const buildCountSql = (spec: ReadSpec, columns: readonly ColumnInfo[], d: Defaults): BigQuerySql => countSql(spec, columns, googleSqlDialect(d));

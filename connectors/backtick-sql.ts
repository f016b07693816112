/**
 * The read SQL of the backtick dialects (BigQuery's GoogleSQL, Databricks SQL), pure and shared.
 * Identifiers backtick-quoted, the watermark bound as one typed named parameter, a user's
 * `{query}` only ever wrapped as a subquery, and the latest row per key as the dialects' own
 * window filter:
 *
 *   SELECT <columns> FROM <source> AS __wh_src WHERE <keys> IS NOT NULL [AND <after> >= <param>]
 *   QUALIFY ROW_NUMBER() OVER (PARTITION BY <keys> ORDER BY <order> DESC NULLS LAST,
 *                              <tie as text> DESC NULLS LAST …) = 1
 *   ORDER BY … <offset clause>
 * What differs per dialect (table paths, the parameter marker and its typing, text casts, how to
 * skip rows) comes in a `BacktickDialect`.
 */
import { cleanUserQuery } from './sql-builder.js';
import { WarehouseError, type ColumnInfo, type ReadSpec, type TableRef } from './warehouse.js';

export interface BacktickDialect<P> {
  /** A table name as the user gave it → the quoted, qualified path. */
  table(name: string): string;
  /** The watermark parameter's marker in SQL (`@wh_after`, `:wh_after`). */
  afterMarker: string;
  /** The watermark bound with the column's own type (`type`: the describe() type, lower-case). */
  afterParameter(value: string | number, type: string | undefined): P;
  /** A column compared as text in the tie-break. */
  asText(quotedColumn: string, type: string | undefined): string;
  /** Skip the first n rows (n > 0, a safe integer). */
  offset(n: number): string;
}

export interface BuiltSql<P> {
  query: string;
  params: P[];
}

export function quoteIdent(name: string): string {
  if (name.length === 0) throw new WarehouseError('an empty column or table name is not allowed');
  if ([...name].some((ch) => ch.charCodeAt(0) < 0x20 || ch === '`' || ch === '\\')) {
    throw new WarehouseError(`name ${JSON.stringify(name)} contains a character a backtick-quoted name cannot hold`);
  }
  return `\`${name}\``;
}

function fromItem<P>(source: TableRef, d: BacktickDialect<P>): string {
  return 'table' in source ? d.table(source.table) : `(${cleanUserQuery(source.query)})`;
}

function body<P>(spec: ReadSpec, columns: readonly ColumnInfo[], d: BacktickDialect<P>, params: P[]): string {
  const typeOf = (name: string) => columns.find((c) => c.name === name)?.type;
  const select = spec.columns && spec.columns.length > 0 ? spec.columns.map((c) => `__wh_src.${quoteIdent(c)}`).join(', ') : '__wh_src.*';
  const where: string[] = [];
  if (spec.latestBy) for (const k of spec.latestBy.keyColumns) where.push(`${quoteIdent(k)} IS NOT NULL`);
  if (spec.after) {
    params.push(d.afterParameter(spec.after.value, typeOf(spec.after.column)));
    where.push(`${quoteIdent(spec.after.column)} >= ${d.afterMarker}`);
  }
  let sql = `SELECT ${select} FROM ${fromItem(spec.source, d)} AS __wh_src${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  if (spec.latestBy) {
    const { keyColumns, orderColumn, tieBreak = [] } = spec.latestBy;
    if (keyColumns.length === 0) throw new WarehouseError('latestBy needs at least one key column');
    const order = [`${quoteIdent(orderColumn)} DESC NULLS LAST`, ...tieBreak.map((c) => `${d.asText(quoteIdent(c), typeOf(c))} DESC NULLS LAST`)].join(', ');
    sql += ` QUALIFY ROW_NUMBER() OVER (PARTITION BY ${keyColumns.map(quoteIdent).join(', ')} ORDER BY ${order}) = 1`;
  }
  return sql;
}

/** The streaming read: deterministic when `orderBy` names a key, resumable with `offset`. */
export function buildReadSql<P>(spec: ReadSpec, columns: readonly ColumnInfo[], d: BacktickDialect<P>): BuiltSql<P> {
  const params: P[] = [];
  let query = body(spec, columns, d, params);
  if (spec.orderBy && spec.orderBy.length > 0) query += ` ORDER BY ${spec.orderBy.map(quoteIdent).join(', ')}`;
  if (spec.offset && spec.offset > 0) {
    if (!Number.isSafeInteger(spec.offset)) throw new WarehouseError('offset must be an integer');
    query += ` ${d.offset(spec.offset)}`;
  }
  return { query, params };
}

/** `SELECT COUNT(*)` over the same rows (offset ignored). */
export function buildCountSql<P>(spec: ReadSpec, columns: readonly ColumnInfo[], d: BacktickDialect<P>): BuiltSql<P> {
  const params: P[] = [];
  return { query: `SELECT COUNT(*) AS n FROM (${body(spec, columns, d, params)}) AS __wh_c`, params };
}

/** A watermark value as an ISO instant (epoch ms numbers and zone-less text read as UTC). */
export function isoInstant(value: string | number): string {
  const ms = typeof value === 'number' ? value : Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value.replace(' ', 'T')}Z`);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(value);
}

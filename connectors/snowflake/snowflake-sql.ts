/**
 * The query text the Snowflake connector sends: pure functions, no driver. Values always travel as
 * `?` binds; identifiers are either validated table paths (left unquoted so Snowflake resolves them
 * the usual case-insensitive way) or column names, which are quoted exactly as the source reports
 * them (Snowflake stores unquoted names upper-case: a column created as `event_time` is `EVENT_TIME`).
 */
import { isSpace, stripEnd } from '../../src/lib/strip-end.js';
import { WarehouseError, type ColumnInfo, type ReadSpec, type TableRef } from '../warehouse.js';

export interface SqlStatement {
  sqlText: string;
  binds: (string | number)[];
}

/** A column name as a Snowflake quoted identifier (exact, case-sensitive). */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\u0000')) throw new SnowflakeSqlError(`invalid column name ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

// One part of a table path: a plain identifier (case-insensitive in Snowflake) or a quoted one.
const PART = String.raw`(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"\u0000]|"")+")`;
const TABLE_PATH_RE = new RegExp(`^${PART}(?:\\.${PART}){0,2}$`);

/**
 * A `table` parameter as SQL: `events`, `analytics.events`, `DB.SCHEMA."Mixed Case"`. Refuses
 * anything else, so a table name can never carry SQL.
 */
export function tablePath(table: string): string {
  const t = table.trim();
  if (!TABLE_PATH_RE.test(t)) {
    throw new SnowflakeSqlError(
      `table must be a Snowflake table name such as EVENTS, SCHEMA.EVENTS or DB.SCHEMA.EVENTS (quote parts with "…" for mixed case), got ${JSON.stringify(table)}`,
    );
  }
  return t;
}

/** The FROM item for a source: a table path, or the user's query as a derived table. */
export function fromItem(source: TableRef): string {
  if ('table' in source) return tablePath(source.table);
  // One run of semicolons before trailing whitespace, as `/;+\s*$/` did, but in one linear pass.
  const q = stripEnd(stripEnd(source.query.trim(), isSpace), (ch) => ch === ';').trim();
  if (q.length === 0) throw new SnowflakeSqlError('query must not be empty');
  // Newlines around the query: a trailing `-- comment` in it must not swallow the parenthesis.
  return `(\n${q}\n) AS "src"`;
}

/** Zero rows, full result metadata (names, types, nullability): the schema of a table or query. */
export function describeSql(source: TableRef): string {
  return `SELECT * FROM ${fromItem(source)} LIMIT 0`;
}

/** Snowflake types that can be compared and sorted; semi-structured and binary types are left out of tie-breakers. */
const ORDERABLE = /^(fixed|real|text|boolean|date|time|timestamp_ntz|timestamp_ltz|timestamp_tz)$/;

/**
 * The read query of a sync. `columns` is the source's schema (from describe): it validates the
 * columns named in the spec and tells how to compare the watermark value with the `after` column.
 *
 * - `columns` (spec): the select list, quoted exactly; default `*`.
 * - `after`: `WHERE "col" > <value>` (timestamps compared as timestamps, dates as dates).
 * - `latestBy`: null keys excluded, then `QUALIFY ROW_NUMBER() OVER (PARTITION BY keys ORDER BY
 *   order DESC NULLS LAST, TO_VARCHAR(tie) DESC NULLS LAST …) = 1` — the dedupe runs in Snowflake
 *   and only one row per key crosses the network. Tie-breakers are compared as text, as the other
 *   sources do; without `tieBreak`, every other sortable column breaks ties, so the pick is still
 *   the same on every run.
 * - `orderBy` / `offset`: `ORDER BY cols` then `LIMIT NULL OFFSET n`, so resuming at an offset
 *   skips the rows already committed.
 */
export function buildReadSql(spec: ReadSpec, columns: ColumnInfo[]): SqlStatement {
  const { sqlText, binds } = readBody(spec, columns);
  let orderBy = '';
  if (spec.orderBy && spec.orderBy.length > 0) {
    const need = columnLookup(columns);
    orderBy = ` ORDER BY ${spec.orderBy.map((c) => quoteIdent(need(c, 'order-by').name)).join(', ')}`;
  }
  let offset = '';
  if (spec.offset !== undefined && spec.offset > 0) {
    if (!Number.isSafeInteger(spec.offset)) throw new SnowflakeSqlError('offset must be a non-negative integer');
    if (!orderBy) throw new SnowflakeSqlError('offset needs orderBy: without an order, skipped rows are not the ones already read');
    offset = ` LIMIT NULL OFFSET ${spec.offset}`;
  }
  return { sqlText: `${sqlText}${orderBy}${offset}`, binds };
}

/** The source's clock as epoch milliseconds: a change point (see buildChangesSql). */
export const CHANGE_POINT_SQL = 'SELECT DATE_PART(EPOCH_MILLISECOND, CURRENT_TIMESTAMP()) AS "NOW_MS"';

/**
 * The net changes of a table since a change point (epoch ms): Snowflake's CHANGES clause (the table
 * needs CHANGE_TRACKING = TRUE), with the two metadata columns that say what happened —
 * METADATA$ACTION (INSERT or DELETE) and METADATA$ISUPDATE (the pair an update shows as). Ordered
 * by the key, a key's DELETE before its INSERT.
 */
export function buildChangesSql(spec: ReadSpec, columns: ColumnInfo[], since: number, keyColumn: string): SqlStatement {
  if (!('table' in spec.source)) throw new SnowflakeSqlError('change tracking reads a table, not a query');
  if (!Number.isSafeInteger(since)) throw new SnowflakeSqlError('the change point must be epoch milliseconds');
  const need = columnLookup(columns);
  const select = (spec.columns && spec.columns.length > 0 ? spec.columns : columns.map((c) => c.name)).map((c) => quoteIdent(need(c, 'selected').name));
  const key = quoteIdent(need(keyColumn, 'key').name);
  return {
    sqlText:
      `SELECT ${select.join(', ')}, METADATA$ACTION AS "__action", METADATA$ISUPDATE AS "__isupdate" ` +
      `FROM ${tablePath(spec.source.table)} CHANGES(INFORMATION => DEFAULT) AT(TIMESTAMP => TO_TIMESTAMP_LTZ(?, 3)) ` +
      `ORDER BY ${key}, METADATA$ACTION`,
    binds: [since],
  };
}

/** `SELECT COUNT(*)` over the rows of `spec` (order and offset ignored). */
export function buildCountSql(spec: ReadSpec, columns: ColumnInfo[]): SqlStatement {
  const { sqlText, binds } = readBody(spec, columns);
  return { sqlText: `SELECT COUNT(*) AS "n" FROM (${sqlText}) AS "c"`, binds };
}

function columnLookup(columns: ColumnInfo[]): (name: string, role: string) => ColumnInfo {
  const byName = new Map(columns.map((c) => [c.name, c]));
  return (name, role) => {
    const col = byName.get(name);
    if (col) return col;
    const folded = columns.find((c) => c.name.toLowerCase() === name.toLowerCase());
    const hint = folded ? ` (Snowflake column names are case-sensitive here: did you mean ${folded.name}?)` : '';
    throw new SnowflakeSqlError(`${role} column ${JSON.stringify(name)} is not in the source${hint}`);
  };
}

function readBody(spec: ReadSpec, columns: ColumnInfo[]): SqlStatement {
  const need = columnLookup(columns);
  const select = spec.columns && spec.columns.length > 0 ? spec.columns.map((c) => quoteIdent(need(c, 'selected').name)).join(', ') : '*';
  const binds: (string | number)[] = [];
  const where: string[] = [];
  if (spec.after) {
    const col = need(spec.after.column, 'watermark');
    const { placeholder, value } = watermarkBind(col, spec.after.value);
    where.push(`${quoteIdent(col.name)} >= ${placeholder}`);
    binds.push(value);
  }
  let qualify = '';
  if (spec.latestBy) {
    const keys = spec.latestBy.keyColumns.map((k) => need(k, 'key'));
    if (keys.length === 0) throw new SnowflakeSqlError('latestBy needs at least one key column');
    const order = need(spec.latestBy.orderColumn, 'order');
    for (const k of keys) where.push(`${quoteIdent(k.name)} IS NOT NULL`);
    const ties = spec.latestBy.tieBreak
      ? spec.latestBy.tieBreak.map((c) => need(c, 'tie-break').name)
      : tieBreakers(columns, new Set([...keys.map((k) => k.name), order.name]));
    const orderList = [`${quoteIdent(order.name)} DESC NULLS LAST`, ...ties.map((c) => `TO_VARCHAR(${quoteIdent(c)}) DESC NULLS LAST`)].join(', ');
    qualify = ` QUALIFY ROW_NUMBER() OVER (PARTITION BY ${keys.map((k) => quoteIdent(k.name)).join(', ')} ORDER BY ${orderList}) = 1`;
  }
  const whereSql = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  return { sqlText: `SELECT ${select} FROM ${fromItem(spec.source)}${whereSql}${qualify}`, binds };
}

function tieBreakers(columns: ColumnInfo[], used: Set<string>): string[] {
  return columns.filter((c) => !used.has(c.name) && ORDERABLE.test(c.type)).map((c) => c.name);
}

/**
 * How a watermark is compared with its column. The connector hands timestamps out as JS Dates
 * (millisecond precision), so a stored watermark is an ISO string or epoch milliseconds; comparing
 * at millisecond precision can only re-read a row with the same millisecond (deduplicated by insert
 * id on the way in), never skip one.
 */
export function watermarkBind(col: ColumnInfo, value: string | number): { placeholder: string; value: string | number } {
  const type = col.type;
  if (type.startsWith('timestamp') || type === 'date') {
    const ms = typeof value === 'number' ? value : /^\s*-?\d+(\.\d+)?\s*$/.test(value) ? Number(value) : Date.parse(value);
    if (!Number.isFinite(ms)) throw new SnowflakeSqlError(`watermark ${JSON.stringify(value)} is not a time for ${type} column ${col.name}`);
    const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.678Z
    const wall = `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
    if (type === 'date') return { placeholder: 'TO_DATE(?)', value: iso.slice(0, 10) };
    // NTZ values are read as UTC wall-clock times, so the watermark goes back the same way.
    if (type === 'timestamp_ntz') return { placeholder: 'TO_TIMESTAMP_NTZ(?)', value: wall };
    return { placeholder: 'TO_TIMESTAMP_TZ(?)', value: `${wall} +00:00` };
  }
  return { placeholder: '?', value };
}

/** A spec that cannot be turned into SQL (unknown column, bad table name): a user error. */
export class SnowflakeSqlError extends WarehouseError {
  constructor(message: string) {
    super(message, false);
    this.name = 'SnowflakeSqlError';
  }
}

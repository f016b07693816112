/**
 * The source-side SQL for a ReadSpec, pure and shared by every SQL connector (sqlite, postgres,
 * and snowflake if it wants it). Identifiers are always quoted; values are always bound
 * parameters; a user's `{query}` is only ever wrapped as a subquery.
 *
 * Shape of a read:
 *   SELECT <columns> FROM (<source>) AS "__wh_src" [WHERE <after>]              -- plain (<after>: column >= watermark)
 *   SELECT <columns> FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY <keys>
 *       ORDER BY <orderColumn> DESC NULLS LAST, CAST(<tie> AS TEXT) DESC NULLS LAST …) AS "__wh_rn"
 *     FROM (<source>) AS "__wh_src" WHERE <keys> IS NOT NULL [AND <after>]) AS "__wh_l"
 *   WHERE "__wh_rn" = 1                                                       -- latestBy
 *   … ORDER BY <orderBy> <offset>
 */
import { isSpace, stripEnd } from '../src/lib/strip-end.js';
import type { KeyRange, ReadSpec, TableRef } from './warehouse.js';
import { WarehouseError } from './warehouse.js';

export interface SqlDialect {
  readonly name: string;
  /** The n-th (1-based) bound parameter. */
  placeholder(n: number): string;
  /** Skip rows without a limit (`LIMIT -1 OFFSET ?` in SQLite, `OFFSET $n` in Postgres). */
  offset(placeholder: string): string;
  /** Additive: a quoted identifier (default: the standard double quotes; MySQL: backticks). */
  quote?(name: string): string;
  /** Additive: an ORDER BY term, descending with NULLs last (default `x DESC NULLS LAST`). */
  descNullsLast?(expr: string): string;
  /** Additive: an expression cast to text for tie-breaking (default `CAST(x AS TEXT)`). */
  castText?(expr: string): string;
}

export const SQLITE_DIALECT: SqlDialect = {
  name: 'sqlite',
  placeholder: () => '?',
  offset: (p) => `LIMIT -1 OFFSET ${p}`,
};

export const POSTGRES_DIALECT: SqlDialect = {
  name: 'postgres',
  placeholder: (n) => `$${n}`,
  offset: (p) => `OFFSET ${p}`,
};

export interface BuiltQuery {
  sql: string;
  params: unknown[];
}

/** The name of the window helper column; never part of a returned row when `columns` is given. */
export const ROW_NUMBER_COLUMN = '__wh_rn';

/** A double-quoted identifier (`"` doubled inside), the SQL standard form all three sources accept. */
export function quoteIdent(name: string): string {
  if (name.length === 0) throw new WarehouseError('an empty column or table name is not allowed');
  if (name.includes('\u0000')) throw new WarehouseError('a name must not contain NUL characters');
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * `schema.table` or `table` (also `db.schema.table`): each dot-separated part quoted. A part may
 * itself be written in double quotes to contain a dot (`"my.schema"."t"`).
 */
export function splitTableName(table: string): string[] {
  const parts: string[] = [];
  let i = 0;
  const s = table.trim();
  while (i < s.length) {
    if (s[i] === '"') {
      let j = i + 1;
      let part = '';
      for (;;) {
        if (j >= s.length) throw new WarehouseError(`table name ${JSON.stringify(table)} has an unclosed quote`);
        if (s[j] === '"') {
          if (s[j + 1] === '"') {
            part += '"';
            j += 2;
            continue;
          }
          break;
        }
        part += s[j];
        j += 1;
      }
      parts.push(part);
      i = j + 1;
    } else {
      const dot = s.indexOf('.', i);
      const end = dot === -1 ? s.length : dot;
      parts.push(s.slice(i, end).trim());
      i = end;
    }
    if (i < s.length) {
      if (s[i] !== '.') throw new WarehouseError(`table name ${JSON.stringify(table)} is not of the form schema.table`);
      i += 1;
      if (i === s.length) parts.push('');
    }
  }
  if (parts.length === 0 || parts.length > 3 || parts.some((p) => p.length === 0)) {
    throw new WarehouseError(`table name ${JSON.stringify(table)} is not of the form [database.][schema.]table`);
  }
  return parts;
}

export function quoteTable(table: string, quote: (name: string) => string = quoteIdent): string {
  return splitTableName(table).map(quote).join('.');
}

/** A user's SELECT as a subquery body: trailing semicolons and whitespace removed. */
export function cleanUserQuery(query: string): string {
  const q = stripEnd(query.trim(), (ch) => ch === ';' || isSpace(ch));
  if (q.length === 0) throw new WarehouseError('the query is empty');
  return q;
}

/** The FROM item for a source: a quoted table, or the user's query in parentheses. */
export function fromItem(source: TableRef, quote: (name: string) => string = quoteIdent): string {
  return 'table' in source ? quoteTable(source.table, quote) : `(${cleanUserQuery(source.query)})`;
}

function selectList(columns: string[] | undefined, qualifier: string, q: (name: string) => string): string {
  if (!columns || columns.length === 0) return `${qualifier}.*`;
  return columns.map((c) => `${qualifier}.${q(c)}`).join(', ');
}

/** A dialect's quoting, ordering and casting, defaults filled in. */
function parts(d: SqlDialect) {
  const q = d.quote ?? quoteIdent;
  return {
    q,
    desc: d.descNullsLast ?? ((e: string) => `${e} DESC NULLS LAST`),
    text: d.castText ?? ((e: string) => `CAST(${e} AS TEXT)`),
  };
}

/** The rows of `spec` without ORDER BY / OFFSET (the body of both the read and the count). */
function body(spec: ReadSpec, d: SqlDialect, params: unknown[], columns: string[] | undefined): string {
  const { q, desc, text } = parts(d);
  const where: string[] = [];
  if (spec.after) {
    params.push(spec.after.value);
    where.push(`${q(spec.after.column)} >= ${d.placeholder(params.length)}`);
  }
  if (spec.range) where.push(rangeCondition(spec.range, d, params));
  const srcAlias = q('__wh_src');
  const src = `${fromItem(spec.source, q)} AS ${srcAlias}`;
  if (!spec.latestBy) {
    return `SELECT ${selectList(columns, srcAlias, q)} FROM ${src}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  }
  const { keyColumns, orderColumn, tieBreak = [] } = spec.latestBy;
  if (keyColumns.length === 0) throw new WarehouseError('latestBy needs at least one key column');
  for (const k of keyColumns) where.push(`${q(k)} IS NOT NULL`);
  const order = [desc(q(orderColumn)), ...tieBreak.map((c) => desc(text(q(c))))].join(', ');
  const partition = keyColumns.map(q).join(', ');
  const inner =
    `SELECT ${srcAlias}.*, ROW_NUMBER() OVER (PARTITION BY ${partition} ORDER BY ${order}) AS ${q(ROW_NUMBER_COLUMN)} ` +
    `FROM ${src} WHERE ${where.join(' AND ')}`;
  const latest = q('__wh_l');
  return `SELECT ${selectList(columns, latest, q)} FROM (${inner}) AS ${latest} WHERE ${latest}.${q(ROW_NUMBER_COLUMN)} = 1`;
}

/** `column >= from AND column < to` (open bounds left out), `OR column IS NULL` with `nulls`. */
function rangeCondition(range: KeyRange, d: SqlDialect, params: unknown[]): string {
  const col = parts(d).q(range.column);
  const bounds: string[] = [];
  if (range.from !== undefined) {
    params.push(range.from);
    bounds.push(`${col} >= ${d.placeholder(params.length)}`);
  }
  if (range.to !== undefined) {
    params.push(range.to);
    bounds.push(`${col} < ${d.placeholder(params.length)}`);
  }
  const inRange = bounds.length > 0 ? bounds.join(' AND ') : `${col} IS NOT NULL`;
  return range.nulls ? `(${inRange} OR ${col} IS NULL)` : `(${inRange})`;
}

/**
 * The split points of a partitioned run: the value of `column` at every `every`-th row of the
 * rows of `spec` in `column` order, one window query (a single sort in the source).
 */
export function buildSplitPointsQuery(spec: ReadSpec, column: string, every: number, d: SqlDialect): BuiltQuery {
  if (!Number.isSafeInteger(every) || every < 1) throw new WarehouseError('split interval must be a positive integer');
  const params: unknown[] = [];
  const rows = body({ ...spec, range: undefined }, d, params, [column]);
  const { q } = parts(d);
  const col = q(column);
  const [s, p, n] = [q('__wh_s'), q('__wh_p'), q('__wh_pn')];
  params.push(every);
  const sql =
    `SELECT ${p}.${col} AS v FROM (SELECT ${s}.${col}, ROW_NUMBER() OVER (ORDER BY ${s}.${col}) AS ${n} ` +
    `FROM (${rows}) AS ${s} WHERE ${s}.${col} IS NOT NULL) AS ${p} WHERE ${p}.${n} % ${d.placeholder(params.length)} = 0 ` +
    `ORDER BY ${p}.${n}`;
  return { sql, params };
}

/** Split points without equal neighbours (a value shared by many rows must not start two partitions). */
export function distinctPoints(values: unknown[]): (string | number)[] {
  const out: (string | number)[] = [];
  for (const v of values) {
    const p = v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? v.toString() : (v as string | number);
    if (out.length === 0 || out[out.length - 1] !== p) out.push(p);
  }
  return out;
}

/** The streaming read: deterministic when `orderBy` names a key, resumable with `offset`. */
export function buildReadQuery(spec: ReadSpec, d: SqlDialect): BuiltQuery {
  const params: unknown[] = [];
  let sql = body(spec, d, params, spec.columns);
  if (spec.orderBy && spec.orderBy.length > 0) sql += ` ORDER BY ${spec.orderBy.map(parts(d).q).join(', ')}`;
  if (spec.offset && spec.offset > 0) {
    if (!Number.isSafeInteger(spec.offset)) throw new WarehouseError('offset must be an integer');
    params.push(spec.offset);
    sql += ` ${d.offset(d.placeholder(params.length))}`;
  }
  return { sql, params };
}

/** `SELECT COUNT(*)` over the same rows (offset ignored). */
export function buildCountQuery(spec: ReadSpec, d: SqlDialect): BuiltQuery {
  const params: unknown[] = [];
  const sql = `SELECT COUNT(*) AS n FROM (${body(spec, d, params, spec.columns)}) AS ${parts(d).q('__wh_c')}`;
  return { sql, params };
}

/** Zero rows with the columns of a source (to learn a query's columns). */
export function buildProbeQuery(source: TableRef, d?: SqlDialect): string {
  const q = d ? parts(d).q : quoteIdent;
  return `SELECT * FROM ${fromItem(source, q)} AS ${q('__wh_src')} LIMIT 0`;
}

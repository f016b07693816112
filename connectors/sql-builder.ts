/**
 * The source-side SQL for a ReadSpec, pure and shared by every SQL connector (sqlite, postgres,
 * and snowflake if it wants it). Identifiers are always quoted; values are always bound
 * parameters; a user's `{query}` is only ever wrapped as a subquery.
 *
 * Shape of a read:
 *   SELECT <columns> FROM (<source>) AS "__wh_src" [WHERE <after>]              -- plain
 *   SELECT <columns> FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY <keys>
 *       ORDER BY <orderColumn> DESC NULLS LAST, CAST(<tie> AS TEXT) DESC NULLS LAST …) AS "__wh_rn"
 *     FROM (<source>) AS "__wh_src" WHERE <keys> IS NOT NULL [AND <after>]) AS "__wh_l"
 *   WHERE "__wh_rn" = 1                                                       -- latestBy
 *   … ORDER BY <orderBy> <offset>
 */
import type { ReadSpec, TableRef } from './warehouse.js';
import { WarehouseError } from './warehouse.js';

export interface SqlDialect {
  readonly name: string;
  /** The n-th (1-based) bound parameter. */
  placeholder(n: number): string;
  /** Skip rows without a limit (`LIMIT -1 OFFSET ?` in SQLite, `OFFSET $n` in Postgres). */
  offset(placeholder: string): string;
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

export function quoteTable(table: string): string {
  return splitTableName(table).map(quoteIdent).join('.');
}

/** A user's SELECT as a subquery body: trailing semicolons and whitespace removed. */
export function cleanUserQuery(query: string): string {
  const q = query.trim().replace(/[;\s]+$/, '');
  if (q.length === 0) throw new WarehouseError('the query is empty');
  return q;
}

/** The FROM item for a source: a quoted table, or the user's query in parentheses. */
export function fromItem(source: TableRef): string {
  return 'table' in source ? quoteTable(source.table) : `(${cleanUserQuery(source.query)})`;
}

function selectList(columns: string[] | undefined, qualifier: string): string {
  if (!columns || columns.length === 0) return `${qualifier}.*`;
  return columns.map((c) => `${qualifier}.${quoteIdent(c)}`).join(', ');
}

/** The rows of `spec` without ORDER BY / OFFSET (the body of both the read and the count). */
function body(spec: ReadSpec, d: SqlDialect, params: unknown[], columns: string[] | undefined): string {
  const where: string[] = [];
  if (spec.after) {
    params.push(spec.after.value);
    where.push(`${quoteIdent(spec.after.column)} > ${d.placeholder(params.length)}`);
  }
  const src = `${fromItem(spec.source)} AS "__wh_src"`;
  if (!spec.latestBy) {
    return `SELECT ${selectList(columns, '"__wh_src"')} FROM ${src}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  }
  const { keyColumns, orderColumn, tieBreak = [] } = spec.latestBy;
  if (keyColumns.length === 0) throw new WarehouseError('latestBy needs at least one key column');
  for (const k of keyColumns) where.push(`${quoteIdent(k)} IS NOT NULL`);
  const order = [
    `${quoteIdent(orderColumn)} DESC NULLS LAST`,
    ...tieBreak.map((c) => `CAST(${quoteIdent(c)} AS TEXT) DESC NULLS LAST`),
  ].join(', ');
  const partition = keyColumns.map(quoteIdent).join(', ');
  const inner =
    `SELECT "__wh_src".*, ROW_NUMBER() OVER (PARTITION BY ${partition} ORDER BY ${order}) AS ${quoteIdent(ROW_NUMBER_COLUMN)} ` +
    `FROM ${src} WHERE ${where.join(' AND ')}`;
  return `SELECT ${selectList(columns, '"__wh_l"')} FROM (${inner}) AS "__wh_l" WHERE "__wh_l".${quoteIdent(ROW_NUMBER_COLUMN)} = 1`;
}

/** The streaming read: deterministic when `orderBy` names a key, resumable with `offset`. */
export function buildReadQuery(spec: ReadSpec, d: SqlDialect): BuiltQuery {
  const params: unknown[] = [];
  let sql = body(spec, d, params, spec.columns);
  if (spec.orderBy && spec.orderBy.length > 0) sql += ` ORDER BY ${spec.orderBy.map(quoteIdent).join(', ')}`;
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
  const sql = `SELECT COUNT(*) AS n FROM (${body(spec, d, params, spec.columns)}) AS "__wh_c"`;
  return { sql, params };
}

/** Zero rows with the columns of a source (to learn a query's columns). */
export function buildProbeQuery(source: TableRef): string {
  return `SELECT * FROM ${fromItem(source)} AS "__wh_src" LIMIT 0`;
}

/**
 * Translates the GoogleSQL / Databricks SQL the connectors emit (and the simple user queries tests write)
 * into SQLite: backtick names, table paths after FROM/JOIN resolved against the stand-in's one
 * project and dataset (an unknown one is BigQuery's "Not found"), `@name` parameters (better-sqlite3
 * binds them by name), GoogleSQL type names in CAST, and QUALIFY rewritten as a derived table (the
 * Snowflake stand-in's rewrite). A token-level rewrite, not a parser: it covers these shapes only.
 */
import { applyQualify, tokenize, type Token } from '../snowflake-standin/standin-sql.js';

export class NotFoundError extends Error {}
export class InvalidQueryError extends Error {}

export interface Scope {
  projectId: string;
  datasetId: string;
  location: string;
  /** From the request's `defaultDataset`, if any. */
  defaultDataset?: { projectId?: string; datasetId: string };
  tableExists(name: string): boolean;
}

const TYPE_NAMES: Record<string, string> = { STRING: 'TEXT', INT64: 'INTEGER', BIGINT: 'INTEGER', FLOAT64: 'REAL', DOUBLE: 'REAL', BOOL: 'INTEGER', NUMERIC: 'NUMERIC', BYTES: 'BLOB' };

/** `a.b.c` in backticks → `"a"."b"."c"` (BigQuery lets one pair of backticks span a whole path). */
function unbacktick(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < sql.length && sql[j] !== c) j += sql[j] === '\\' ? 2 : 1;
      out += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === '`') {
      const j = sql.indexOf('`', i + 1);
      if (j < 0) throw new InvalidQueryError('Syntax error: Unclosed identifier literal');
      out += sql
        .slice(i + 1, j)
        .split('.')
        .map((p) => `"${p.replaceAll('"', '""')}"`)
        .join('.');
      i = j + 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

const nameOf = (t: Token) => (t.kind === 'qident' ? t.text.slice(1, -1).replaceAll('""', '"') : t.text);
const isName = (t: Token | undefined) => t?.kind === 'word' || t?.kind === 'qident';

function skip(tokens: Token[], i: number): number {
  while (i < tokens.length && (tokens[i]!.kind === 'ws' || tokens[i]!.kind === 'comment')) i++;
  return i;
}

/**
 * GoogleSQL / Databricks SQL → SQLite tokens. `resolve` turns a table path after FROM/JOIN into
 * the SQLite text that replaces it (a quoted table, or a parenthesised subquery).
 */
export function translate(sql: string, resolve: (parts: string[]) => string): Token[] {
  const tokens = tokenize(unbacktick(sql));
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    // @name → a named parameter
    if (t.text === '@' && tokens[i + 1]?.kind === 'word') {
      out.push({ kind: 'param', text: `@${tokens[i + 1]!.text}` });
      i += 1;
      continue;
    }
    if (t.kind === 'word' && t.text.toUpperCase() === 'AS' && out.length > 0) {
      // CAST(x AS STRING) and friends
      const n = skip(tokens, i + 1);
      const type = tokens[n]?.kind === 'word' ? TYPE_NAMES[tokens[n]!.text.toUpperCase()] : undefined;
      if (type && tokens[skip(tokens, n + 1)]?.text === ')') {
        out.push(t, { kind: 'ws', text: ' ' }, { kind: 'word', text: type });
        i = n;
        continue;
      }
    }
    if (t.kind === 'word' && t.text.toUpperCase() === 'LIMIT' && tokens[skip(tokens, i + 1)]?.text.toUpperCase() === 'ALL') {
      out.push(t, { kind: 'ws', text: ' ' }, { kind: 'number', text: '-1' });
      i = skip(tokens, i + 1);
      continue;
    }
    out.push(t);
    if (t.kind === 'word' && (t.text.toUpperCase() === 'FROM' || t.text.toUpperCase() === 'JOIN')) {
      const s = skip(tokens, i + 1);
      if (!isName(tokens[s])) continue;
      const parts: Token[] = [tokens[s]!];
      let j = s;
      while (tokens[j + 1]?.text === '.' && isName(tokens[j + 2])) {
        parts.push(tokens[j + 2]!);
        j += 2;
      }
      for (let k = i + 1; k < s; k++) out.push(tokens[k]!);
      out.push({ kind: 'word', text: resolve(parts.map(nameOf)) });
      i = j;
    }
  }
  return out;
}

/** BigQuery's table paths: `project.dataset.table`, `dataset.table`, or `table` with a default dataset. */
export function bigQueryTables(scope: Scope): (parts: string[]) => string {
  return (parts) => `"${resolveTable(parts, scope).replaceAll('"', '""')}"`;
}

function resolveTable(parts: string[], scope: Scope): string {
  if (parts.length > 3) throw new InvalidQueryError(`Invalid table name: ${parts.join('.')}`);
  const table = parts[parts.length - 1]!;
  const dataset: string | undefined = parts.length >= 2 ? parts[parts.length - 2] : scope.defaultDataset?.datasetId;
  const project = parts.length === 3 ? parts[0]! : parts.length === 2 ? scope.projectId : (scope.defaultDataset?.projectId ?? scope.projectId);
  if (!dataset) throw new InvalidQueryError(`Table "${table}" must be qualified with a dataset (e.g. dataset.table).`);
  if (project !== scope.projectId || dataset !== scope.datasetId) {
    throw new NotFoundError(`Not found: Dataset ${project}:${dataset} was not found in location ${scope.location}`);
  }
  if (!scope.tableExists(table)) throw new NotFoundError(`Not found: Table ${project}:${dataset}.${table} was not found in location ${scope.location}`);
  return table;
}

/** The SQLite text of a translated statement; `columnsOf` names a SQLite query's output columns (for QUALIFY). */
export function toSqlite(tokens: Token[], columnsOf: (sql: string) => string[]): string {
  return applyQualify(tokens, columnsOf);
}

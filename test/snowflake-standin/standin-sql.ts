/**
 * Translates the Snowflake SQL the connector emits (and the simple user queries tests write) into
 * SQLite: `?` binds numbered, `DB.SCHEMA.TABLE` paths resolved against the session, `LIMIT NULL`,
 * session functions (CURRENT_WAREHOUSE() …), `SYSTEM$WAIT(n)` (a delay), and `QUALIFY` rewritten
 * as a derived table with the predicate as a column. A token-level rewrite, not a parser: it covers
 * the shapes listed here and nothing more.
 */

export interface Token {
  kind: 'ws' | 'comment' | 'word' | 'qident' | 'string' | 'number' | 'param' | 'punct';
  text: string;
}

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const rest = sql.slice(i);
    let m: RegExpExecArray | null;
    if ((m = /^\s+/.exec(rest))) out.push({ kind: 'ws', text: m[0] });
    else if ((m = /^--[^\n]*/.exec(rest)) || (m = /^\/\*[\s\S]*?\*\//.exec(rest))) out.push({ kind: 'comment', text: m[0] });
    else if (c === "'") {
      let j = i + 1;
      while (j < n) {
        if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === '\\') j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      if (j >= n) throw new StandinSqlError('syntax error: unterminated string literal');
      out.push({ kind: 'string', text: sql.slice(i, j + 1) });
      i = j + 1;
      continue;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n) {
        if (sql[j] === '"' && sql[j + 1] === '"') j += 2;
        else if (sql[j] === '"') break;
        else j++;
      }
      if (j >= n) throw new StandinSqlError('syntax error: unterminated quoted identifier');
      out.push({ kind: 'qident', text: sql.slice(i, j + 1) });
      i = j + 1;
      continue;
    } else if ((m = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(rest))) out.push({ kind: 'word', text: m[0] });
    else if ((m = /^\d+(\.\d+)?([eE][+-]?\d+)?/.exec(rest))) out.push({ kind: 'number', text: m[0] });
    else if (c === '?') out.push({ kind: 'param', text: '?' });
    else if ((m = /^(::|<=|>=|<>|!=|\|\|)/.exec(rest))) out.push({ kind: 'punct', text: m[0] });
    else out.push({ kind: 'punct', text: c });
    i += out[out.length - 1]!.text.length;
  }
  return out;
}

export class StandinSqlError extends Error {}

export interface SessionNames {
  database: string | null;
  schema: string | null;
  warehouse: string | null;
  role: string | null;
  user: string;
}

export interface Translation {
  /** SQLite text, binds as `@p1`, `@p2`, … (better-sqlite3 has no numbered `?N`); QUALIFY still to be applied with `applyQualify`. */
  tokens: Token[];
  /** Milliseconds of SYSTEM$WAIT found in the query. */
  waitMs: number;
  /** The query reads a table (so it needs a warehouse and a current database in Snowflake). */
  readsTables: boolean;
}

const isWord = (t: Token | undefined, w: string) => t?.kind === 'word' && t.text.toUpperCase() === w;
const identValue = (t: Token) => (t.kind === 'qident' ? t.text.slice(1, -1).replaceAll('""', '"') : t.text.toUpperCase());
const sqlString = (s: string | null) => (s === null ? 'NULL' : `'${s.replaceAll("'", "''")}'`);

/** Index of the next non-whitespace, non-comment token at or after `i`. */
function next(tokens: Token[], i: number): number {
  while (i < tokens.length && (tokens[i]!.kind === 'ws' || tokens[i]!.kind === 'comment')) i++;
  return i;
}

export function translate(sql: string, session: SessionNames): Translation {
  const tokens = tokenize(sql);
  const out: Token[] = [];
  let param = 0;
  let waitMs = 0;
  let readsTables = false;
  const sessionFns: Record<string, string | null> = {
    CURRENT_WAREHOUSE: session.warehouse,
    CURRENT_DATABASE: session.database,
    CURRENT_SCHEMA: session.schema,
    CURRENT_ROLE: session.role,
    CURRENT_USER: session.user.toUpperCase(),
    CURRENT_VERSION: '8.0.0-standin',
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'param') {
      out.push({ kind: 'param', text: `@p${++param}` });
      continue;
    }
    if (t.kind === 'word') {
      const upper = t.text.toUpperCase();
      if (upper === 'FROM' || upper === 'JOIN') readsTables = true;
      // Session functions: NAME ( ) → literal
      if (upper in sessionFns) {
        const open = next(tokens, i + 1);
        const close = next(tokens, open + 1);
        if (tokens[open]?.text === '(' && tokens[close]?.text === ')') {
          out.push({ kind: 'string', text: sqlString(sessionFns[upper]!) });
          i = close;
          continue;
        }
      }
      // SYSTEM$WAIT(n [, 'unit']) → delay + its result text
      if (upper === 'SYSTEM$WAIT') {
        const open = next(tokens, i + 1);
        const amount = next(tokens, open + 1);
        let j = next(tokens, amount + 1);
        let unit = 'SECONDS';
        if (tokens[j]?.text === ',') {
          const u = next(tokens, j + 1);
          unit = tokens[u]!.text.replaceAll("'", '').toUpperCase();
          j = next(tokens, u + 1);
        }
        if (tokens[open]?.text !== '(' || tokens[amount]?.kind !== 'number' || tokens[j]?.text !== ')') {
          throw new StandinSqlError('syntax error: SYSTEM$WAIT(<number> [, <unit>])');
        }
        const n = Number(tokens[amount]!.text);
        waitMs += unit.startsWith('MILLI') ? n : unit.startsWith('MIN') ? n * 60_000 : unit.startsWith('HOUR') ? n * 3_600_000 : n * 1000;
        out.push({ kind: 'string', text: sqlString(`waited ${n} ${unit.toLowerCase()}`) });
        i = j;
        continue;
      }
      // CURRENT_TIMESTAMP() → the clock in epoch ms (only DATE_PART(EPOCH_MILLISECOND, …) reads it here)
      if (upper === 'CURRENT_TIMESTAMP' && tokens[next(tokens, i + 1)]?.text === '(' && tokens[next(tokens, next(tokens, i + 1) + 1)]?.text === ')') {
        out.push({ kind: 'word', text: 'STANDIN_NOW_MS()' });
        i = next(tokens, next(tokens, i + 1) + 1);
        continue;
      }
      if (upper === 'EPOCH_MILLISECOND') {
        out.push({ kind: 'string', text: `'EPOCH_MILLISECOND'` });
        continue;
      }
      // LIMIT NULL → LIMIT -1 (no limit)
      if (upper === 'LIMIT' && isWord(tokens[next(tokens, i + 1)], 'NULL')) {
        out.push(t, { kind: 'ws', text: ' ' }, { kind: 'number', text: '-1' });
        i = next(tokens, i + 1);
        continue;
      }
    }
    // Object paths: DB.SCHEMA.T / SCHEMA.T → T when they name the session's database/schema.
    if (t.kind === 'word' || t.kind === 'qident') {
      const parts: Token[] = [t];
      let j = i;
      while (tokens[j + 1]?.text === '.' && (tokens[j + 2]?.kind === 'word' || tokens[j + 2]?.kind === 'qident')) {
        parts.push(tokens[j + 2]!);
        j += 2;
      }
      if (parts.length >= 2 && parts.length <= 3) {
        const names = parts.map(identValue);
        const db = session.database?.toUpperCase();
        const sc = session.schema?.toUpperCase();
        const upperNames = names.map((s) => s.toUpperCase());
        const matches3 = parts.length === 3 && upperNames[0] === db && upperNames[1] === sc;
        const matches2 = parts.length === 2 && (upperNames[0] === sc || upperNames[0] === db);
        if (matches3 || matches2) {
          out.push(parts[parts.length - 1]!);
          i = j;
          continue;
        }
        if (parts.length === 3) throw new StandinSqlError(`OBJECT_MISSING ${names.join('.')}`);
      }
      for (let k = i; k <= j; k++) out.push(tokens[k]!);
      i = j;
      continue;
    }
    out.push(t);
  }
  return { tokens: out, waitMs, readsTables };
}

export const render = (tokens: Token[]) => tokens.map((t) => t.text).join('');

/** Top-level (parenthesis depth 0) index of the first keyword in `words`, from `from`. */
function topLevel(tokens: Token[], words: string[], from = 0): number {
  let depth = 0;
  for (let i = from; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    else if (depth === 0 && t.kind === 'word' && words.includes(t.text.toUpperCase())) return i;
  }
  return -1;
}

/**
 * `SELECT <list> FROM … [WHERE …] QUALIFY <predicate> [ORDER BY …] [LIMIT …]` →
 * `SELECT <cols> FROM (SELECT <list>, (<predicate>) AS "__qualify" FROM … [WHERE …]) WHERE "__qualify" [ORDER BY …] [LIMIT …]`,
 * at the top level or inside a parenthesised subquery (e.g. a COUNT(*) over such a query).
 * `columnsOf` returns the output column names of a SQLite query (the head), to spell out <cols>.
 */
export function applyQualify(tokens: Token[], columnsOf: (sql: string) => string[]): string {
  for (;;) {
    const q = tokens.findIndex((t) => t.kind === 'word' && t.text.toUpperCase() === 'QUALIFY');
    if (q < 0) return render(tokens);
    // The enclosing parentheses of this QUALIFY (or the whole statement).
    let depth = 0;
    let start = 0;
    for (let i = q - 1; i >= 0; i--) {
      if (tokens[i]!.text === ')') depth++;
      else if (tokens[i]!.text === '(') {
        if (depth === 0) {
          start = i + 1;
          break;
        }
        depth--;
      }
    }
    depth = 0;
    let end = tokens.length;
    for (let i = q + 1; i < tokens.length; i++) {
      if (tokens[i]!.text === '(') depth++;
      else if (tokens[i]!.text === ')') {
        if (depth === 0) {
          end = i;
          break;
        }
        depth--;
      }
    }
    const rewritten = rewriteQualify(tokens.slice(start, end), columnsOf);
    tokens = [...tokens.slice(0, start), { kind: 'word', text: rewritten }, ...tokens.slice(end)];
  }
}

function rewriteQualify(tokens: Token[], columnsOf: (sql: string) => string[]): string {
  const q = topLevel(tokens, ['QUALIFY']);
  const end = topLevel(tokens, ['ORDER', 'LIMIT', 'OFFSET'], q + 1);
  const head = tokens.slice(0, q);
  const predicate = tokens.slice(q + 1, end < 0 ? tokens.length : end);
  const tail = end < 0 ? [] : tokens.slice(end);
  const from = topLevel(head, ['FROM']);
  if (from < 0) throw new StandinSqlError('syntax error: QUALIFY without FROM');
  const cols = columnsOf(render(head)).map((c) => `"${c.replaceAll('"', '""')}"`);
  const inner = `${render(head.slice(0, from))}, (${render(predicate)}) AS "__qualify" ${render(head.slice(from))}`;
  return `SELECT ${cols.join(', ')} FROM (${inner}) AS "__q" WHERE "__qualify" ${render(tail)}`;
}

/**
 * Snowflake change tracking in the stand-in: a table with CHANGE_TRACKING = TRUE (set by a test
 * through `enableChangeTracking`, as an admin would with ALTER TABLE) logs every row version in
 * `__changes` (SQLite triggers, so writes through the fixture's own connection are seen), and
 * `<table> CHANGES(INFORMATION => DEFAULT) AT(TIMESTAMP => <t>)` reads the NET changes since
 * <t> as Snowflake does: per row, its version at <t> against its version now — a new row is an
 * INSERT, a gone row a DELETE, a changed row a DELETE + INSERT pair with METADATA$ISUPDATE = TRUE,
 * a row changed and changed back nothing. A table without tracking, or a <t> before tracking began,
 * is Snowflake's error.
 */
import type Database from 'better-sqlite3';
import { StandinSqlError, type Token } from './standin-sql.js';

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)`;

export function enableChangeTracking(db: Database.Database, table: string): void {
  const cols = db.prepare(`SELECT * FROM ${q(table)} LIMIT 0`).columns().map((c) => c.name);
  const json = (ref: 'NEW' | 'OLD') => `json_object(${cols.map((c) => `'${c.replaceAll("'", "''")}', ${ref}.${q(c)}`).join(', ')})`;
  db.exec(`CREATE TABLE IF NOT EXISTS "__changes" (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, at INTEGER NOT NULL, rid INTEGER NOT NULL, old TEXT, new TEXT)`);
  db.exec(`CREATE TABLE IF NOT EXISTS "__change_tracking" (tbl TEXT PRIMARY KEY, since INTEGER NOT NULL)`);
  const t = table.toUpperCase().replaceAll("'", "''");
  db.exec(`INSERT OR IGNORE INTO "__change_tracking" VALUES ('${t}', ${NOW_MS})`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS ${q(`__ct_i_${table}`)} AFTER INSERT ON ${q(table)} BEGIN
    INSERT INTO "__changes" (tbl, at, rid, old, new) VALUES ('${t}', ${NOW_MS}, NEW.rowid, NULL, ${json('NEW')}); END`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS ${q(`__ct_u_${table}`)} AFTER UPDATE ON ${q(table)} BEGIN
    INSERT INTO "__changes" (tbl, at, rid, old, new) VALUES ('${t}', ${NOW_MS}, NEW.rowid, ${json('OLD')}, ${json('NEW')}); END`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS ${q(`__ct_d_${table}`)} AFTER DELETE ON ${q(table)} BEGIN
    INSERT INTO "__changes" (tbl, at, rid, old, new) VALUES ('${t}', ${NOW_MS}, OLD.rowid, ${json('OLD')}, NULL); END`);
}

const text = (t: Token | undefined) => t?.text.toUpperCase();

/** Index of the next token that is not white space or a comment. */
function skip(tokens: Token[], i: number): number {
  while (i < tokens.length && (tokens[i]!.kind === 'ws' || tokens[i]!.kind === 'comment')) i++;
  return i;
}

/** Matches `words` (single tokens, white space between allowed) from `i`; the index after, or -1. */
function expect(tokens: Token[], i: number, words: string[]): number {
  for (const w of words) {
    i = skip(tokens, i);
    if (text(tokens[i]) !== w) return -1;
    i++;
  }
  return i;
}

/** Rewrites `<table> CHANGES(INFORMATION => DEFAULT) AT(TIMESTAMP => <expr>)` into the net-changes derived table. */
export function applyChanges(tokens: Token[], db: Database.Database, binds: Record<string, unknown>): Token[] {
  for (let i = 0; i < tokens.length; i++) {
    if (text(tokens[i]) !== 'CHANGES') continue;
    const tableAt = (() => {
      let j = i - 1;
      while (j >= 0 && tokens[j]!.kind === 'ws') j--;
      return j;
    })();
    const tableToken = tokens[tableAt];
    let j = expect(tokens, i + 1, ['(', 'INFORMATION', '=', '>', 'DEFAULT', ')', 'AT', '(', 'TIMESTAMP', '=', '>']);
    if (!tableToken || j < 0) throw new StandinSqlError('syntax error: CHANGES(INFORMATION => DEFAULT) AT(TIMESTAMP => …) is what the stand-in supports');
    const start = j;
    let depth = 0;
    for (; j < tokens.length; j++) {
      if (tokens[j]!.text === '(') depth++;
      else if (tokens[j]!.text === ')') {
        if (depth === 0) break;
        depth--;
      }
    }
    const since = tokens.slice(start, j).map((t) => t.text).join('');
    const table = tableToken.kind === 'qident' ? tableToken.text.slice(1, -1) : tableToken.text;
    const used = Object.fromEntries(Object.entries(binds).filter(([k]) => since.includes(`@${k}`)));
    const sinceMs = Number((db.prepare(`SELECT STANDIN_MS(${since}) AS ms`).get(used) as { ms: number }).ms);
    const derived = netChangesSql(db, table, sinceMs);
    tokens = [...tokens.slice(0, tableAt), { kind: 'word', text: `(${derived}) AS ${q(table)}` }, ...tokens.slice(j + 1)];
  }
  return tokens.map((t) => (t.kind === 'word' && /^METADATA\$(ACTION|ISUPDATE)$/i.test(t.text) ? { kind: 'qident', text: q(t.text.toUpperCase()) } : t));
}

/** Epoch ms since which the table's changes are logged; undefined when it has no change tracking. */
export function trackedSince(db: Database.Database, table: string): number | undefined {
  if (db.prepare(`SELECT 1 FROM sqlite_master WHERE name = '__change_tracking'`).get() === undefined) return undefined;
  return (db.prepare(`SELECT since FROM "__change_tracking" WHERE tbl = ?`).get(table.toUpperCase()) as { since: number } | undefined)?.since;
}

/** The table's columns read out of a logged version (`ref`: the JSON column `old` or `new`). */
export function versionColumns(db: Database.Database, table: string, ref: 'old' | 'new'): string {
  const cols = db.prepare(`SELECT * FROM ${q(table)} LIMIT 0`).columns().map((c) => c.name);
  return cols.map((c) => `json_extract(${ref}, '$.' || ${sqlString(JSON.stringify(c))}) AS ${q(c)}`).join(', ');
}

function netChangesSql(db: Database.Database, table: string, sinceMs: number): string {
  const t = table.toUpperCase().replaceAll("'", "''");
  const since = trackedSince(db, table);
  if (since === undefined || !Number.isFinite(sinceMs) || sinceMs < since) throw new StandinChangeError(table);
  const pick = (ref: 'old' | 'new') => versionColumns(db, table, ref);
  return `WITH "__w" AS (SELECT rid, min(seq) AS s0, max(seq) AS s1 FROM "__changes" WHERE tbl = '${t}' AND at > ${Math.trunc(sinceMs)} GROUP BY rid),
    "__n" AS (SELECT (SELECT old FROM "__changes" WHERE seq = "__w".s0) AS old, (SELECT new FROM "__changes" WHERE seq = "__w".s1) AS new FROM "__w")
    SELECT ${pick('new')}, 'INSERT' AS "METADATA$ACTION", (old IS NOT NULL) AS "METADATA$ISUPDATE" FROM "__n" WHERE new IS NOT NULL AND (old IS NULL OR old <> new)
    UNION ALL
    SELECT ${pick('old')}, 'DELETE' AS "METADATA$ACTION", (new IS NOT NULL) AS "METADATA$ISUPDATE" FROM "__n" WHERE old IS NOT NULL AND (new IS NULL OR old <> new)`;
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** Snowflake's answer for CHANGES on a table without (enough) change tracking. */
export class StandinChangeError extends Error {
  readonly code = '000707';
  readonly sqlState = '02000';
  constructor(table: string) {
    super(`Change tracking is not enabled or has been missing for the time range requested on table '${table.toUpperCase()}'.`);
  }
}

/** The SQL functions the rewrite and the change point use. */
export function registerChangeFunctions(db: Database.Database): void {
  db.function('STANDIN_MS', { deterministic: true }, (v: unknown) => (typeof v === 'number' ? v : v === null ? null : Date.parse(String(v))));
  db.function('STANDIN_NOW_MS', { deterministic: false }, () => Date.now());
  db.function('DATE_PART', { deterministic: true }, (_unit: unknown, v: unknown) => v);
}

/**
 * Databricks' change data feed in the stand-in: `table_changes('<table>', :param)` over a table
 * whose row versions are logged (the Snowflake stand-in's change log, turned on by a test as an
 * admin would set delta.enableChangeDataFeed) reads every change at or after the timestamp the
 * way Databricks does — one row per insert and delete, an update as an `update_preimage` and an
 * `update_postimage` row — with `_change_type`, `_commit_version` and `_commit_timestamp`. Also
 * `current_timestamp()` and `unix_millis(…)` for the change point. Rewrites on the statement text.
 */
import type Database from 'better-sqlite3';
import { trackedSince, versionColumns } from '../snowflake-standin/standin-changes.js';

export class StandinChangeFeedError extends Error {}

/**
 * The statement with its change-feed reads rewritten, and the tables they read: a column read out
 * of the change log has no origin, so its type is the table's column of the same name.
 */
export function rewriteChangeFeed(statement: string, db: Database.Database, params: Record<string, unknown>): { statement: string; tables: string[] } {
  db.function('STANDIN_NOW_MS', { deterministic: false }, () => Date.now());
  db.function('unix_millis', { deterministic: true }, (v: unknown) => v);
  const tables: string[] = [];
  const rewritten = statement
    .replace(/\bcurrent_timestamp\(\s*\)/gi, 'STANDIN_NOW_MS()')
    .replace(/\btable_changes\(\s*'((?:[^']|'')+)'\s*,\s*:(\w+)\s*\)/gi, (_m, name: string, param: string) => {
      const table = name.replaceAll("''", "'").split('.').pop()!.replaceAll('`', '');
      tables.push(table);
      // A TIMESTAMP parameter arrives in the stored form 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC).
      const since = params[param];
      const sinceMs = typeof since === 'string' ? Date.parse(`${since.replace(' ', 'T').slice(0, 23)}Z`) : Number(since);
      const tracked = trackedSince(db, table);
      if (tracked === undefined || !Number.isFinite(sinceMs) || sinceMs < tracked) {
        throw new StandinChangeFeedError(
          `[DELTA_MISSING_CHANGE_DATA] Error getting change data for range as change data was not recorded for the table ${name}. If you've enabled change data feed on this table, use \`DESCRIBE HISTORY\` to see when it was first enabled. SQLSTATE: 22000`,
        );
      }
      const t = table.toUpperCase().replaceAll("'", "''");
      const from = `FROM "__changes" WHERE tbl = '${t}' AND at >= ${Math.trunc(sinceMs)}`;
      const meta = (type: string) => `'${type}' AS "_change_type", seq AS "_commit_version", at AS "_commit_timestamp"`;
      return `(SELECT ${versionColumns(db, table, 'new')}, ${meta('insert')} ${from} AND old IS NULL
        UNION ALL SELECT ${versionColumns(db, table, 'old')}, ${meta('update_preimage')} ${from} AND old IS NOT NULL AND new IS NOT NULL
        UNION ALL SELECT ${versionColumns(db, table, 'new')}, ${meta('update_postimage')} ${from} AND old IS NOT NULL AND new IS NOT NULL
        UNION ALL SELECT ${versionColumns(db, table, 'old')}, ${meta('delete')} ${from} AND new IS NULL) AS "${table.replaceAll('"', '""')}"`;
    });
  return { statement: rewritten, tables };
}

/**
 * Mirror updates and deletes by `(project_id, insert_id)`, of the import's own events only
 * (event-store.ts, MirrorScope). The dedupe index starts with those two columns (migration 008),
 * so each key is one index range; the stamp is checked on the few rows it holds.
 */
import { dialect, rawRows, type DbOrTrx } from '../../db/knex.js';
import { WAREHOUSE_IMPORT_STAMP, type MirrorScope } from '../event-store.js';
import { selectEventRows, type EventRows } from '../event-rows.js';
import { insertEventRows } from './sql-write.js';

const CHUNK = 500;

/** The import's stamp in the stored properties (text JSON on SQLite, jsonb on PostgreSQL). */
function stampSql(trx: DbOrTrx): string {
  return dialect(trx) === 'postgres' ? `properties->>'${WAREHOUSE_IMPORT_STAMP}'` : `json_extract(properties, '$."${WAREHOUSE_IMPORT_STAMP}"')`;
}

/** Deletes the import's events with one of the insert ids; returns how many of the ids it held. */
export async function deleteKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<number> {
  const unique = [...new Set(insertIds)];
  let found = 0;
  for (let i = 0; i < unique.length; i += CHUNK) {
    const part = unique.slice(i, i + CHUNK);
    // One pass over the keys' rows: what was deleted says which ids were stored (an id may have
    // several rows, one per event name, distinct id or time).
    // Raw: knex's delete on better-sqlite3 answers the count even with `returning`.
    const sql = `DELETE FROM events WHERE project_id = ? AND insert_id IN (${part.map(() => '?').join(',')}) AND ${stampSql(trx)} = ? RETURNING insert_id`;
    const deleted = rawRows<{ insert_id: string }>(trx, await trx.raw(sql, [projectId, ...part, scope.importId]));
    found += new Set(deleted.map((r) => r.insert_id)).size;
  }
  return found;
}

/** Replaces the events of each row's insert id by the row; returns {updated, inserted}. */
export async function replaceKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, source: string, rows: EventRows, now: number) {
  // The last row of an insert id wins, as a mirror's latest read of that row would.
  const last = new Map<string, number>();
  rows.insertId.forEach((id, i) => last.set(id, i));
  const picked = selectEventRows(
    rows,
    [...last.values()].sort((a, b) => a - b),
  );
  const updated = await deleteKeys(trx, projectId, scope, picked.insertId);
  const stored = await insertEventRows(trx, projectId, source, picked, now);
  return { updated, inserted: stored - updated };
}

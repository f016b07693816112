/**
 * Mirror updates and deletes by `(project_id, insert_id)` (event-store.ts). The dedupe index
 * starts with those two columns (migration 008), so each key is one index range.
 */
import { rawRows, type DbOrTrx } from '../../db/knex.js';
import { selectEventRows, type EventRows } from '../event-rows.js';
import { insertEventRows } from './sql-write.js';

const CHUNK = 500;

/** Deletes every event of the project with one of the insert ids; returns how many of the ids were stored. */
export async function deleteKeys(trx: DbOrTrx, projectId: number, insertIds: readonly string[]): Promise<number> {
  const unique = [...new Set(insertIds)];
  let found = 0;
  for (let i = 0; i < unique.length; i += CHUNK) {
    const part = unique.slice(i, i + CHUNK);
    // One pass over the keys' rows: what was deleted says which ids were stored (an id may have
    // several rows, one per event name, distinct id or time).
    // Raw: knex's delete on better-sqlite3 answers the count even with `returning`.
    const sql = `DELETE FROM events WHERE project_id = ? AND insert_id IN (${part.map(() => '?').join(',')}) RETURNING insert_id`;
    const deleted = rawRows<{ insert_id: string }>(trx, await trx.raw(sql, [projectId, ...part]));
    found += new Set(deleted.map((r) => r.insert_id)).size;
  }
  return found;
}

/** Replaces the events of each row's insert id by the row; returns {updated, inserted}. */
export async function replaceKeys(trx: DbOrTrx, projectId: number, source: string, rows: EventRows, now: number) {
  // The last row of an insert id wins, as a mirror's latest read of that row would.
  const last = new Map<string, number>();
  rows.insertId.forEach((id, i) => last.set(id, i));
  const picked = selectEventRows(
    rows,
    [...last.values()].sort((a, b) => a - b),
  );
  const updated = await deleteKeys(trx, projectId, picked.insertId);
  const stored = await insertEventRows(trx, projectId, source, picked, now);
  return { updated, inserted: stored - updated };
}

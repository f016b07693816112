/**
 * Mirror updates and deletes by `(project_id, insert_id)`, of the import's own events only
 * (event-store.ts, MirrorScope). The dedupe index starts with those two columns (migration 008),
 * so each key is one index range; the stamp is checked on the few rows it holds.
 */
import { dialect, rawRows, type DbOrTrx } from '../../db/knex.js';
import { WAREHOUSE_IMPORT_STAMP, type MirrorResult, type MirrorScope } from '../event-store.js';
import { selectEventRows, type EventRows } from '../event-rows.js';
import { insertEventRows } from './sql-write.js';

const CHUNK = 500;

/** The import's stamp in the stored properties (text JSON on SQLite, jsonb on PostgreSQL). */
function stampSql(trx: DbOrTrx): string {
  return dialect(trx) === 'postgres' ? `properties->>'${WAREHOUSE_IMPORT_STAMP}'` : `json_extract(properties, '$."${WAREHOUSE_IMPORT_STAMP}"')`;
}

/** Deletes the import's events with one of the insert ids; returns how many of the ids it held. */
export async function deleteKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<number> {
  return (await deleteHeldKeys(trx, projectId, scope, insertIds)).size;
}

/** Deletes every event of the import; returns how many. */
export async function deleteStamped(trx: DbOrTrx, projectId: number, scope: MirrorScope): Promise<number> {
  return trx('events').where({ project_id: projectId }).andWhereRaw(`${stampSql(trx)} = ?`, [scope.importId]).delete();
}

/** The insert ids of which the import held events, deleting those events. */
async function deleteHeldKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<Set<string>> {
  const unique = [...new Set(insertIds)];
  const held = new Set<string>();
  for (let i = 0; i < unique.length; i += CHUNK) {
    const part = unique.slice(i, i + CHUNK);
    // One pass over the keys' rows: what was deleted says which ids were stored (an id may have
    // several rows, one per event name, distinct id or time).
    // Raw: knex's delete on better-sqlite3 answers the count even with `returning`.
    const sql = `DELETE FROM events WHERE project_id = ? AND insert_id IN (${part.map(() => '?').join(',')}) AND ${stampSql(trx)} = ? RETURNING insert_id`;
    for (const r of rawRows<{ insert_id: string }>(trx, await trx.raw(sql, [projectId, ...part, scope.importId]))) held.add(r.insert_id);
  }
  return held;
}

/** The dedupe keys of the import's events with one of the insert ids. */
async function ownKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < insertIds.length; i += CHUNK) {
    const part = insertIds.slice(i, i + CHUNK);
    const sql = `SELECT event, distinct_id, time, insert_id FROM events WHERE project_id = ? AND insert_id IN (${part.map(() => '?').join(',')}) AND ${stampSql(trx)} = ?`;
    for (const r of rawRows<{ event: string; distinct_id: string; time: number | string; insert_id: string }>(trx, await trx.raw(sql, [projectId, ...part, scope.importId]))) {
      out.add(dedupeKey(r.event, r.distinct_id, Number(r.time), r.insert_id));
    }
  }
  return out;
}

const dedupeKey = (event: string, distinctId: string, time: number, insertId: string) => `${event}\u0000${distinctId}\u0000${time}\u0000${insertId}`;

/**
 * Replaces the import's events of each row's insert id by the row. A row whose dedupe key another
 * source's event already holds is not stored (that event stays, as the write path's dedupe
 * keeps it): its insert id is in `skipped`.
 */
export async function replaceKeys(trx: DbOrTrx, projectId: number, scope: MirrorScope, source: string, rows: EventRows, now: number): Promise<MirrorResult> {
  // The last row of an insert id wins, as a mirror's latest read of that row would.
  const last = new Map<string, number>();
  rows.insertId.forEach((id, i) => last.set(id, i));
  const picked = selectEventRows(
    rows,
    [...last.values()].sort((a, b) => a - b),
  );
  const held = await deleteHeldKeys(trx, projectId, scope, picked.insertId);
  await insertEventRows(trx, projectId, source, picked, now);
  // Read back rather than counted: inside the transaction this sees exactly which rows are the import's now.
  const own = await ownKeys(trx, projectId, scope, picked.insertId);
  const result: MirrorResult = { updated: 0, inserted: 0, skipped: [] };
  picked.insertId.forEach((id, i) => {
    if (!own.has(dedupeKey(picked.event[i]!, picked.distinctId[i]!, picked.time[i]!, id))) result.skipped.push(id);
    else if (held.has(id)) result.updated++;
    else result.inserted++;
  });
  return result;
}

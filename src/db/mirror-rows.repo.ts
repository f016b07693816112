/**
 * The snapshot of a mirror import (migration 010): per key, the hash of the row the project holds
 * and the run that last saw the key. Written in the same transaction as the events or profiles it
 * describes, so it always says what the project holds.
 */
import { partitionSeenPrefix, UNSEEN, type SnapshotEntry } from '../domain/mirror-diff.js';
import type { Knex } from 'knex';
import type { DbOrTrx } from './knex.js';

/** Keys per statement: well inside SQLite's bound-variable limit. */
const CHUNK = 500;

export async function loadMirrorRows(db: DbOrTrx, importId: number, keys: readonly string[]): Promise<Map<string, SnapshotEntry>> {
  const out = new Map<string, SnapshotEntry>();
  const unique = [...new Set(keys)];
  for (let i = 0; i < unique.length; i += CHUNK) {
    const rows = await db('mirror_rows')
      .where('import_id', importId)
      .whereIn('key', unique.slice(i, i + CHUNK))
      .select('key', 'row_hash', 'seen_run', 'prop_keys');
    for (const r of rows) {
      const entry: SnapshotEntry = { hash: r.row_hash as string, seenRun: r.seen_run as string };
      if (r.prop_keys !== null && r.prop_keys !== undefined) entry.propKeys = JSON.parse(r.prop_keys as string) as string[];
      out.set(r.key as string, entry);
    }
  }
  return out;
}

/** Records that `runId` saw these keys with these hashes, and for profiles the property names the row set (new keys added, others updated). */
export async function markMirrorRows(
  db: DbOrTrx,
  importId: number,
  rows: readonly { key: string; hash: string; propKeys?: readonly string[] }[],
  runId: string,
): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows
      .slice(i, i + CHUNK)
      .map((r) => ({ import_id: importId, key: r.key, row_hash: r.hash, seen_run: runId, prop_keys: r.propKeys ? JSON.stringify(r.propKeys) : null }));
    await db('mirror_rows').insert(part).onConflict(['import_id', 'key']).merge(['row_hash', 'seen_run', 'prop_keys']);
  }
}

/**
 * Rows the run has not seen: marked neither with its id nor with one of its partitions'
 * (`<run>:p<idx>`, domain/mirror-diff.ts `partitionSeenTag`).
 */
function notSeenBy(q: Knex.QueryBuilder, runId: string): Knex.QueryBuilder {
  const prefix = partitionSeenPrefix(runId).replace(/[\\%_]/g, (c) => `\\${c}`);
  return q.whereNot('seen_run', runId).whereRaw("seen_run NOT LIKE ? ESCAPE '\\'", [`${prefix}%`]);
}

/** Up to `limit` keys the run has not seen (vanished from the warehouse), in key order. */
export async function unseenMirrorKeys(db: DbOrTrx, importId: number, runId: string, limit: number): Promise<string[]> {
  const rows = await notSeenBy(db('mirror_rows').where('import_id', importId), runId).orderBy('key').limit(limit).select('key');
  return rows.map((r: { key: string }) => r.key);
}

/**
 * Forgets that `seenAs` (a run, or one partition of it) saw any key: a resumed read re-reads
 * from its first row and marks again exactly the rows the table still holds, so the sweep
 * deletes the rest — a row read by an earlier attempt and deleted since included. The hashes
 * stay: a row already written comes back "the same".
 */
export async function unmarkMirrorRows(db: DbOrTrx, importId: number, seenAs: string): Promise<number> {
  return db('mirror_rows').where({ import_id: importId, seen_run: seenAs }).update({ seen_run: UNSEEN });
}

/**
 * Removes these keys from the snapshot unless the run saw them; returns how many it removed —
 * so of two sweepers deleting the same keys at once, only one counts each.
 */
export async function removeMirrorRows(db: DbOrTrx, importId: number, keys: readonly string[], runId: string): Promise<number> {
  let n = 0;
  for (let i = 0; i < keys.length; i += CHUNK) {
    n += await notSeenBy(db('mirror_rows').where('import_id', importId).whereIn('key', keys.slice(i, i + CHUNK)), runId).delete();
  }
  return n;
}

/** Forgets an import's snapshot (the import was deleted). */
export async function dropMirrorRows(db: DbOrTrx, importId: number): Promise<void> {
  await db('mirror_rows').where('import_id', importId).delete();
}

/** Forgets the snapshots of a source's imports (the source is being deleted; its imports go by cascade, the snapshot has no foreign key). */
export async function dropSourceMirrorRows(db: DbOrTrx, sourceId: number): Promise<void> {
  await db('mirror_rows')
    .whereIn('import_id', db('warehouse_imports').where({ source_id: sourceId }).select('id'))
    .delete();
}

/**
 * Mirror syncs (sync_mode "mirror"): after every run the project holds exactly what the table
 * holds. Each batch compares its rows with the import's snapshot (domain/mirror-diff.ts) and, in
 * ONE transaction with the run's counts and checkpoint: inserts new rows, replaces changed ones
 * (events by insert id through the event store; profiles by `$set` of the row's values and `$unset`
 * of its null columns), and marks every row it read as seen by this run. When the whole table
 * has been read, the sweep deletes what the run did not see — the rows that vanished — chunk by
 * chunk, each chunk committed with its count.
 *
 * The snapshot changes only with what it describes, so a crash at any point loses nothing
 * committed; a resumed attempt forgets its run's marks and re-reads from the first row (a
 * position in a table that may have changed names no fixed row): rows already written are the
 * same, the table's rows are marked again, and the sweep deletes exactly what the table no longer
 * holds. A failed run leaves project and snapshot in step, and the next run's diff is still exact.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Row } from '../../connectors/warehouse.js';
import type { Db } from '../db/knex.js';
import { loadMirrorRows, markMirrorRows, removeMirrorRows, unseenMirrorKeys } from '../db/mirror-rows.repo.js';
import { claimKeys, classifyRows, MIRROR_KEY_MAX, nullColumns, rowHash, snapshotChanges, unsetNames } from '../domain/mirror-diff.js';
import { insertIdOfCell, type MapOutcome, type ProfileUpdateOut } from '../domain/warehouse-mapping.js';
import { idValue } from '../domain/warehouse-values.js';
import { applyGroupUpdates, applyProfileUpdates } from '../ingest/profiles.ingest.js';
import type { EventStore, MirrorScope } from '../store/event-store.js';
import { selectEventRows } from '../store/event-rows.js';
import type { PreparedEventBatch } from './event-reader.js';
import { commitStaged, type BatchRecorder, type Trx } from './sync-batch.js';
import type { SyncState } from './sync-state.js';

export interface MirrorContext {
  db: Db;
  events: EventStore;
  record: BatchRecorder;
  projectId: number;
  importId: number;
  /** The run: a key it (or any of its partitions) saw is taken, and not swept. */
  runId: string;
  /** What this read marks the rows it saw as: the run id, or a partition's `<run>:p<idx>` (so a resumed partition forgets only its own marks). */
  seenAs?: string;
}

/** How a people or groups table maps for a mirror: the profile mapper and the columns that are not properties. */
export interface MirrorProfileWriter {
  kind: 'people' | 'groups';
  map: (row: Row) => MapOutcome<ProfileUpdateOut>;
  /** The id, time and JSON columns: never `$unset` as properties. */
  mapped: ReadonlySet<string>;
}

/** A mirror replaces and deletes only the events its own import loaded (they carry its stamp). */
const mirrorScope = (mc: MirrorContext): MirrorScope => ({ importId: String(mc.importId) });

const duplicateMessage = (key: string) => `duplicate key '${key}': a mirrored table needs one row per key (the first row read is kept)`;

/**
 * One batch of source rows of an events mirror, classified first: every row costs its key, its
 * hash and a snapshot lookup; only new and changed rows are mapped, validated (`prepare`) and
 * written. False (nothing written) when the run is no longer ours.
 */
export async function commitMirrorEventRows(
  mc: MirrorContext,
  state: SyncState,
  insertIdColumn: string,
  rows: Row[],
  prepare: (rows: Row[], rowNumbers: number[]) => PreparedEventBatch,
): Promise<boolean> {
  const staged = state.stage();
  const first = staged.checkpoint.offset + 1;
  const keyed: { rowNumber: number; key: string; hash: string; row: Row }[] = [];
  rows.forEach((row, i) => {
    const cell = idValue(row[insertIdColumn]);
    if (cell === undefined) return staged.reject(first + i, insertIdColumn, `insert-ID column '${insertIdColumn}' is null or empty: a mirrored row needs its key`);
    keyed.push({ rowNumber: first + i, key: insertIdOfCell(cell), hash: rowHash(row), row });
  });
  staged.read(rows.length);
  // Filled by the event write, recorded in the batch's transaction.
  const seen: { key: string; hash: string }[] = [];
  const given: string[] = [];
  const write = async (within: Trx | undefined, now: number) => {
    const keys = keyed.map((k) => k.key);
    const snapshot = snapshotChanges(keys, keyed.map((k) => k.hash), await loadMirrorRows(within ?? mc.db, mc.importId, keys), mc.runId);
    // Every new or changed row is validated, a repeated key's too: which row takes a key depends on which rows are valid.
    const candidates = snapshot.flatMap((change, i) => (change === 'insert' || change === 'update' ? [i] : []));
    const prepared = candidates.length > 0 ? prepare(candidates.map((i) => keyed[i]!.row), candidates.map((i) => keyed[i]!.rowNumber)) : undefined;
    const rejectedRows = new Set(prepared?.rejected.map((r) => r.row));
    const invalid = new Set(candidates.filter((i) => rejectedRows.has(keyed[i]!.rowNumber)));
    const changes = claimKeys(keys, snapshot, invalid);
    const rejections = [...(prepared?.rejected ?? [])];
    changes.forEach((change, i) => {
      if (invalid.has(i)) return;
      if (change === 'duplicate') rejections.push({ row: keyed[i]!.rowNumber, field: '$insert_id', message: duplicateMessage(keys[i]!) });
      else if (change === 'same') seen.push({ key: keys[i]!, hash: keyed[i]!.hash });
    });
    for (const r of rejections.sort((a, b) => a.row - b.row)) staged.reject(r.row, r.field, r.message);
    if (!prepared) return;
    // The valid candidates, in order, are the prepared rows; those that took their key are written.
    const valid = candidates.filter((i) => !invalid.has(i));
    if (valid.length !== prepared.rows.insertId.length) throw new Error(`mirror batch: ${valid.length} valid rows but ${prepared.rows.insertId.length} prepared`);
    const writeAt = valid.flatMap((i, at) => (changes[i] === 'duplicate' ? [] : [at]));
    const rows = writeAt.length === valid.length ? prepared.rows : selectEventRows(prepared.rows, writeAt);
    const skipped =
      writeAt.length > 0 ? new Set((await mc.events.updateByKey({ projectId: mc.projectId, source: 'warehouse-import', rows, now }, mirrorScope(mc), { within })).skipped) : new Set<string>();
    for (const at of writeAt) {
      const i = valid[at]!;
      const key = keys[i]!;
      if (skipped.has(key)) {
        // Another source's event holds the row's dedupe key: a duplicate, and not the import's
        // to follow — the snapshot forgets the key, so a later vanish deletes nothing of theirs.
        staged.counts.numDeduplicated += 1;
        if (changes[i] === 'update') given.push(key);
        continue;
      }
      seen.push({ key, hash: keyed[i]!.hash });
      if (changes[i] === 'insert') staged.counts.numImported += 1;
      else staged.counts.numUpdated += 1;
    }
  };
  return commitStaged(
    mc,
    state,
    staged,
    async (trx) => {
      if (given.length > 0) await removeMirrorRows(trx, mc.importId, given, mc.runId);
      await markMirrorRows(trx, mc.importId, seen, mc.seenAs ?? mc.runId);
    },
    { store: mc.events, write },
  );
}

/** One batch of people or group rows of a mirror run. False (nothing written) when the run is no longer ours. */
export async function commitMirrorProfileBatch(mc: MirrorContext, state: SyncState, writer: MirrorProfileWriter, rows: Row[]): Promise<boolean> {
  const staged = state.stage();
  const first = staged.checkpoint.offset + 1;
  const mapped: { rowNumber: number; key: string; hash: string; update: ProfileUpdateOut; nulls: string[] }[] = [];
  rows.forEach((row, i) => {
    const out = writer.map(row);
    if (!out.ok) return staged.reject(first + i, out.field, out.message);
    const { $time: _time, ...update } = out.value;
    const key = String(writer.kind === 'people' ? update.$distinct_id : update.$group_id);
    if (key.length > MIRROR_KEY_MAX) return staged.reject(first + i, '', `key '${key.slice(0, 40)}…' is longer than ${MIRROR_KEY_MAX} characters`);
    // The warehouse is the truth: the row's values win whatever its time, and `$last_seen` stays.
    mapped.push({ rowNumber: first + i, key, hash: rowHash(row), update: { ...update, $ignore_time: true } as ProfileUpdateOut, nulls: nullColumns(row, writer.mapped) });
  });
  staged.read(rows.length);

  return commitStaged(mc, state, staged, async (trx, now) => {
    const keys = mapped.map((m) => m.key);
    const known = await loadMirrorRows(trx, mc.importId, keys);
    const changes = classifyRows(keys, mapped.map((m) => m.hash), known, mc.runId);
    const write: number[] = [];
    changes.forEach((change, i) => {
      if (change === 'duplicate') staged.reject(mapped[i]!.rowNumber, '', duplicateMessage(keys[i]!));
      else if (change !== 'same') write.push(i);
    });
    const updates = write.map((i) => {
      const m = mapped[i]!;
      const unset = unsetNames(m.nulls, m.update.$set, known.get(m.key)?.propKeys);
      return unset.length > 0 ? { ...m.update, $unset: unset } : m.update;
    });
    const apply = writer.kind === 'people' ? applyProfileUpdates : applyGroupUpdates;
    const res = await apply(trx, mc.projectId, updates, { now });
    const refused = new Set(res.rejected.map((r) => write[r.index]!));
    for (const r of res.rejected) staged.reject(mapped[write[r.index]!]!.rowNumber, '', r.message);
    const seen: { key: string; hash: string; propKeys?: string[] }[] = [];
    changes.forEach((change, i) => {
      if (change === 'duplicate') return;
      const key = keys[i]!;
      const old = known.get(key);
      if (refused.has(i)) {
        // Not applied: keep the old entry (seen, so not swept) and try again next run; a new key stays unknown.
        if (old) seen.push({ key, hash: old.hash, propKeys: old.propKeys });
        return;
      }
      seen.push({ key, hash: mapped[i]!.hash, propKeys: Object.keys(mapped[i]!.update.$set) });
      if (change === 'insert') staged.counts.numImported += 1;
      else if (change === 'update') staged.counts.numUpdated += 1;
    });
    await markMirrorRows(trx, mc.importId, seen, mc.seenAs ?? mc.runId);
  });
}

/** Keys deleted per committed chunk of the sweep. */
const SWEEP_CHUNK = 2000;

/**
 * Deletes what the run did not see (rows vanished from the warehouse): events by insert id, or
 * profiles, chunk by chunk, each chunk with its count in one transaction. Call once every row of
 * the run has been read and committed. 'done', 'interrupted' (shutdown: resume later), or false
 * when the run is no longer ours.
 */
export async function sweepVanished(
  mc: MirrorContext,
  kind: 'events' | 'people' | 'groups',
  groupKey: string | undefined,
  state: SyncState,
  signal: AbortSignal,
): Promise<'done' | 'interrupted' | false> {
  for (;;) {
    const keys = await unseenMirrorKeys(mc.db, mc.importId, mc.runId, SWEEP_CHUNK);
    if (keys.length === 0) return 'done';
    if (!(await deleteMirrorKeys(mc, kind, groupKey, state, keys, 0))) return false;
    // A SQLite store answers synchronously, so without a turn of the event loop here the whole
    // sweep runs before a SIGTERM is even seen (nor a timer, nor a job-lock renewal).
    await yieldToEventLoop();
    if (signal.aborted) return 'interrupted';
  }
}

/**
 * Deletes the events or profiles of these keys and their snapshot entries, in one transaction
 * with the run's counts (`read`: source rows this accounts for, e.g. delete rows of a change
 * read). Each key is counted once, by whoever removed its snapshot entry. False when the run is
 * no longer ours.
 */
export function deleteMirrorKeys(
  mc: MirrorContext,
  kind: 'events' | 'people' | 'groups',
  groupKey: string | undefined,
  state: SyncState,
  keys: string[],
  read: number,
): Promise<boolean> {
  const staged = state.stage();
  staged.read(read);
  const deleteEvents = { store: mc.events, write: async (within: Trx | undefined) => void (await mc.events.deleteByKey(mc.projectId, mirrorScope(mc), keys, { within })) };
  return commitStaged(
    mc,
    state,
    staged,
    async (trx, now) => {
      if (kind === 'people') await applyProfileUpdates(trx, mc.projectId, keys.map((k) => ({ $distinct_id: k, $delete: '' })), { now });
      else if (kind === 'groups') await applyGroupUpdates(trx, mc.projectId, keys.map((k) => ({ $group_key: groupKey, $group_id: k, $delete: '' })), { now });
      staged.counts.numDeleted += await removeMirrorRows(trx, mc.importId, keys, mc.runId);
    },
    kind === 'events' ? deleteEvents : undefined,
  );
}

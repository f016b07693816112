/**
 * Mirror syncs' change detection, pure: a row's content hash, and how each row of a batch
 * compares with the snapshot of what the project holds (src/db/mirror-rows.repo.ts).
 *
 * The snapshot keeps, per key, the hash of the row the project holds and the run that last saw
 * the key in the warehouse. A row is new (no snapshot entry), changed (another hash) or the same;
 * a second row with a key this run already saw is a duplicate — a mirror follows one row per key,
 * so the first in the read's order wins and the others are rejected. Keys the run never saw are
 * the vanished rows, deleted when the run has read everything.
 */
import crypto from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { propertyValue } from './warehouse-values.js';

export type MirrorChange = 'insert' | 'update' | 'same' | 'duplicate';

export interface SnapshotEntry {
  hash: string;
  /** The run that last saw the key in the warehouse (or one partition of it, `<run>:p<idx>`; UNSEEN: forgotten by a resumed read). */
  seenRun: string;
  /** Profiles: the property names the row set (what a later row that lacks them `$unset`s). */
  propKeys?: string[];
}

/** What `seenRun` says of a key no read of the current run has seen (yet): set when a resumed read forgets its marks. */
export const UNSEEN = '';

/**
 * A partition of a run marks what it reads as `<run>:p<idx>`, so a resumed partition can forget
 * its own marks (and only those) before it re-reads its range; the run has seen a key that any
 * of its partitions marked.
 */
export const partitionSeenPrefix = (runId: string): string => `${runId}:p`;
export const partitionSeenTag = (runId: string, idx: number): string => `${partitionSeenPrefix(runId)}${idx}`;

/** Whether `runId` (itself, or one of its partitions) has seen a key marked `seenRun`. */
export function seenInRun(seenRun: string, runId: string): boolean {
  return seenRun === runId || seenRun.startsWith(partitionSeenPrefix(runId));
}

/** Longest key a snapshot holds (the column's size); longer keys are rejected rows. */
export const MIRROR_KEY_MAX = 255;

/**
 * The hash of a source row's content: every cell as a property value (dates as ISO text, big
 * integers as digits), keys sorted — so the same content hashes the same whatever the column
 * order or driver types, and any changed cell changes it. 40 hex chars (sha1: a change detector,
 * not a security boundary).
 */
export function rowHash(row: Record<string, unknown>): string {
  const cells: Record<string, unknown> = {};
  for (const k of Object.keys(row)) cells[k] = propertyValue(row[k]);
  return crypto.createHash('sha1').update(canonicalJson(cells)).digest('hex');
}

/**
 * How each row compares with the snapshot. `keys[i]` and `hashes[i]` describe row i; `known` is
 * the snapshot's entries for these keys (entries written earlier in this run count as seen).
 */
export function classifyRows(keys: readonly string[], hashes: readonly string[], known: ReadonlyMap<string, SnapshotEntry>, runId: string): MirrorChange[] {
  return claimKeys(keys, snapshotChanges(keys, hashes, known, runId), new Set());
}

/** Each row against the snapshot alone: a key an earlier batch of this run took is a duplicate; repeats within the batch are claimKeys'. */
export function snapshotChanges(keys: readonly string[], hashes: readonly string[], known: ReadonlyMap<string, SnapshotEntry>, runId: string): MirrorChange[] {
  return keys.map((key, i) => {
    const entry = known.get(key);
    if (!entry) return 'insert';
    if (seenInRun(entry.seenRun, runId)) return 'duplicate';
    return entry.hash === hashes[i] ? 'same' : 'update';
  });
}

/**
 * The first row of a key in the batch takes it; later rows of that key are duplicates. A row in
 * `invalid` (rejected by validation) takes no key and keeps its change: it is rejected for its
 * own reason, and the next row of its key stands — as it would had a batch boundary fallen
 * between them (an earlier batch's rejected row leaves no snapshot entry).
 */
export function claimKeys(keys: readonly string[], changes: readonly MirrorChange[], invalid: ReadonlySet<number>): MirrorChange[] {
  const taken = new Set<string>();
  return keys.map((key, i) => {
    if (invalid.has(i)) return changes[i]!;
    if (taken.has(key)) return 'duplicate';
    taken.add(key);
    return changes[i]!;
  });
}

/** The names of a row's null cells, but for `mapped` columns: what a mirrored profile `$unset`s. */
export function nullColumns(row: Record<string, unknown>, mapped: ReadonlySet<string>): string[] {
  return Object.keys(row).filter((k) => !mapped.has(k) && (row[k] === null || row[k] === undefined));
}

/**
 * What a changed profile row `$unset`s: its null columns, and the properties the previous row set
 * that this one does not (a key gone from a JSON column, a column dropped from the table).
 */
export function unsetNames(nulls: readonly string[], set: Readonly<Record<string, unknown>>, previous: readonly string[] | undefined): string[] {
  const out = new Set(nulls);
  for (const k of previous ?? []) if (!Object.prototype.hasOwnProperty.call(set, k)) out.add(k);
  return [...out];
}

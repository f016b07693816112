/**
 * Partitions of large runs (src/runs/ machinery, every kind): one row per partition with its
 * range, lease (`attempts` is the fencing token: a worker that took over bumps it, so a stale
 * holder's writes match nothing), checkpoint, counts and the worker that last took it.
 */
import { parseJson, toJson, toNumber, type DbOrTrx } from './knex.js';
import { recordRunWorker, type RunKind } from './run-workers.repo.js';

export type { RunKind } from './run-workers.repo.js';
export type PartitionStatus = 'queued' | 'running' | 'done' | 'failed';
const ACTIVE: PartitionStatus[] = ['queued', 'running'];

export interface PartitionKey {
  kind: RunKind;
  runId: string;
  idx: number;
}

export interface Partition<R = unknown, C = Record<string, unknown>> extends PartitionKey {
  total: number;
  status: PartitionStatus;
  range: R;
  attempts: number;
  checkpoint: C;
  counts: Record<string, number>;
  worker: string | null;
  error: string | null;
}

function toPartition<R, C>(r: Record<string, unknown>): Partition<R, C> {
  return {
    kind: r.kind as RunKind,
    runId: r.run_id as string,
    idx: toNumber(r.idx),
    total: toNumber(r.total),
    status: r.status as PartitionStatus,
    range: parseJson<R>(r.range),
    attempts: toNumber(r.attempts),
    checkpoint: parseJson<C>(r.checkpoint),
    counts: parseJson<Record<string, number>>(r.counts),
    worker: (r.worker as string | null) ?? null,
    error: (r.error as string | null) ?? null,
  };
}

const where = (k: PartitionKey) => ({ kind: k.kind, run_id: k.runId, idx: k.idx });

/** Writes a run's plan once: a second planner (a retried or duplicated job) inserts nothing. */
export async function insertPartitions(db: DbOrTrx, kind: RunKind, runId: string, ranges: unknown[], checkpoint: unknown, now: number): Promise<void> {
  if (ranges.length === 0) return;
  const rows = ranges.map((range, idx) => ({
    kind,
    run_id: runId,
    idx,
    total: ranges.length,
    status: 'queued',
    range: toJson(range),
    attempts: 0,
    checkpoint: toJson(checkpoint),
    counts: toJson({}),
    created_at: now,
    updated_at: now,
  }));
  // SQLite caps bound variables per statement: insert in slices.
  for (let i = 0; i < rows.length; i += 50) await db('run_partitions').insert(rows.slice(i, i + 50)).onConflict(['kind', 'run_id', 'idx']).ignore();
}

export async function listPartitions<R, C>(db: DbOrTrx, kind: RunKind, runId: string): Promise<Partition<R, C>[]> {
  return (await db('run_partitions').where({ kind, run_id: runId }).orderBy('idx')).map((r) => toPartition<R, C>(r));
}

export async function findPartition<R, C>(db: DbOrTrx, key: PartitionKey): Promise<Partition<R, C> | undefined> {
  const row = await db('run_partitions').where(where(key)).first();
  return row ? toPartition<R, C>(row) : undefined;
}

/**
 * Takes the partition's lease: queued (or running, when its worker died) → running as attempt
 * `attempts + 1`, recording the worker. Returns the partition as taken, or undefined when it is
 * finished or another worker took it meanwhile.
 */
export async function startPartition<R, C>(db: DbOrTrx, key: PartitionKey, worker: string, now: number): Promise<Partition<R, C> | undefined> {
  const current = await findPartition<R, C>(db, key);
  if (!current || !ACTIVE.includes(current.status)) return undefined;
  const n = await db('run_partitions')
    .where({ ...where(key), attempts: current.attempts })
    .whereIn('status', ACTIVE)
    .update({ status: 'running', attempts: current.attempts + 1, worker, started_at: db.raw('COALESCE(started_at, ?)', [now]), error: null, updated_at: now });
  if (n === 0) return undefined;
  // Read it again: a holder whose lock Redis lost may have committed a batch between our read and
  // the update (same `attempts`, so not fenced yet). Its checkpoint and counts are what we resume
  // from; the stale ones would re-read that batch and count it twice.
  const taken = await findPartition<R, C>(db, key);
  if (!taken || taken.attempts !== current.attempts + 1 || taken.status !== 'running') return undefined;
  await recordRunWorker(db, key.kind, key.runId, worker);
  return taken;
}

/** A committed batch of the partition (call in the batch's transaction); false when the lease is no longer `attempt`'s. */
export async function recordPartition(db: DbOrTrx, key: PartitionKey, attempt: number, p: { checkpoint: unknown; counts: Record<string, number>; now: number }): Promise<boolean> {
  const n = await db('run_partitions')
    .where({ ...where(key), attempts: attempt, status: 'running' })
    .update({ checkpoint: toJson(p.checkpoint), counts: toJson(p.counts), updated_at: p.now });
  return n > 0;
}

/** Ends the partition's attempt: done, failed, or back to queued for a retry. Fenced on `attempt`. */
export async function finishPartition(db: DbOrTrx, key: PartitionKey, attempt: number, status: PartitionStatus, p: { error?: string | null; now: number }): Promise<boolean> {
  const row: Record<string, unknown> = { status, updated_at: p.now };
  if (p.error !== undefined) row.error = p.error;
  if (status === 'done' || status === 'failed') row.finished_at = p.now;
  const n = await db('run_partitions').where({ ...where(key), attempts: attempt }).whereIn('status', ACTIVE).update(row);
  return n > 0;
}

export interface PartitionSummary {
  total: number;
  done: number;
}

/** Per split run: how many partitions, how many done (its workers: run-workers.repo.ts). */
export async function partitionSummaries(db: DbOrTrx, kind: RunKind, runIds: string[]): Promise<Map<string, PartitionSummary>> {
  const out = new Map<string, PartitionSummary>();
  for (let i = 0; i < runIds.length; i += 500) {
    const rows = await db('run_partitions').where({ kind }).whereIn('run_id', runIds.slice(i, i + 500)).select('run_id', 'status');
    for (const r of rows) {
      const s = out.get(r.run_id) ?? { total: 0, done: 0 };
      s.total += 1;
      if (r.status === 'done') s.done += 1;
      out.set(r.run_id, s);
    }
  }
  return out;
}

/** Whether every partition of the run is done (call under the run's row lock to decide who finishes it). */
export async function allPartitionsDone(db: DbOrTrx, kind: RunKind, runId: string): Promise<boolean> {
  const left = await db('run_partitions').where({ kind, run_id: runId }).whereNot('status', 'done').first('idx');
  return left === undefined;
}

/**
 * Forgets the partitions of the sync runs of an import, or of every import of a source: the
 * runs go with their import by cascade, and partitions (shared by every run kind) have no
 * foreign key to follow.
 */
export async function dropSyncPartitions(db: DbOrTrx, of: { importId: number } | { sourceId: number }): Promise<void> {
  const imports = 'importId' in of ? [of.importId] : db('warehouse_imports').where({ source_id: of.sourceId }).select('id');
  await db('run_partitions')
    .where({ kind: 'sync' })
    .whereIn('run_id', db('sync_runs').whereIn('import_id', imports).select('id'))
    .delete();
}

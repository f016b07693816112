/**
 * One batch of a sync written through the single write path — events (prepared by
 * event-reader.ts) via storeEventRows, people/groups via the profile write path — together with
 * the run's counts and checkpoint in ONE transaction, so a crash either keeps both or neither.
 */
import type { Row } from '../../connectors/warehouse.js';
import type { Db } from '../db/knex.js';
import { recordProgress } from '../db/sync-runs.repo.js';
import type { MapOutcome, ProfileUpdateOut } from '../domain/warehouse-mapping.js';
import { storeEventRows } from '../ingest/events.ingest.js';
import { applyGroupUpdates, applyProfileUpdates } from '../ingest/profiles.ingest.js';
import type { PreparedEventBatch } from './event-reader.js';
import type { StagedBatch, SyncState } from './sync-state.js';

export interface BatchWriter {
  kind: 'people' | 'groups';
  map: (row: Row) => MapOutcome<ProfileUpdateOut>;
}

export interface BatchContext {
  db: Db;
  runId: string;
  attempt: number;
  projectId: number;
  writer: BatchWriter;
  /** time_based: the insert-time column whose greatest value becomes the watermark. */
  insertTimeColumn?: string;
}

/** Thrown inside the transaction to roll a batch back when the run is no longer ours. */
class NotOurs extends Error {}

/**
 * Maps and writes one batch of people/group rows. Returns false (and writes nothing) when the run
 * was cancelled, deleted or taken over by a newer attempt; the caller then stops.
 */
export async function commitBatch(bc: BatchContext, state: SyncState, rows: Row[]): Promise<boolean> {
  const staged = state.stage();
  const first = staged.checkpoint.offset + 1; // 1-based number of rows[0] in this run's read
  const good: unknown[] = [];
  const rowOf: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (bc.insertTimeColumn) staged.seeInsertTime(row[bc.insertTimeColumn]);
    const out = bc.writer.map(row);
    if (out.ok) {
      good.push(out.value);
      rowOf.push(first + i);
    } else staged.reject(first + i, out.field, out.message);
  }
  staged.read(rows.length);

  const now = Date.now();
  try {
    await bc.db.transaction(async (trx) => {
      await write(bc, trx, staged, good, rowOf, now);
      const log = staged.lines.length > 0 ? staged.log() : undefined;
      const ours = await recordProgress(trx, bc.runId, bc.attempt, {
        checkpoint: staged.checkpoint,
        ...staged.counts,
        rowsTotal: state.rowsTotal,
        log,
        now,
      });
      if (!ours) throw new NotOurs();
      staged.adopt(log ?? state.log);
    });
  } catch (err) {
    if (err instanceof NotOurs) return false;
    throw err;
  }
  return true;
}

async function write(
  bc: BatchContext,
  trx: Parameters<Parameters<Db['transaction']>[0]>[0],
  staged: StagedBatch,
  good: unknown[],
  rowOf: number[],
  now: number,
): Promise<void> {
  if (good.length === 0) return;
  const w = bc.writer;
  const apply = w.kind === 'people' ? applyProfileUpdates : applyGroupUpdates;
  const res = await apply(trx, bc.projectId, good, { now });
  for (const r of res.rejected) staged.reject(rowOf[r.index]!, '', r.message);
  staged.counts.numImported += res.applied;
}

/**
 * Writes one prepared events batch (event-reader.ts: mapped, validated, serialised) and the run's
 * progress in one transaction. Returns false (nothing written) when the run is no longer ours.
 */
export async function commitEventBatch(
  bc: Pick<BatchContext, 'db' | 'runId' | 'attempt' | 'projectId'>,
  state: SyncState,
  batch: PreparedEventBatch,
): Promise<boolean> {
  const staged = state.stage();
  for (const r of batch.rejected) staged.reject(r.row, r.field, r.message);
  if (batch.maxInsertTime !== undefined) staged.seeInsertTime(batch.maxInsertTime);
  staged.read(batch.read);
  const now = Date.now();
  try {
    await bc.db.transaction(async (trx) => {
      const stored = await storeEventRows(trx, bc.projectId, 'warehouse-import', batch.rows, now);
      staged.counts.numImported += stored.imported;
      staged.counts.numDeduplicated += stored.deduplicated;
      const log = staged.lines.length > 0 ? staged.log() : undefined;
      const ours = await recordProgress(trx, bc.runId, bc.attempt, { checkpoint: staged.checkpoint, ...staged.counts, rowsTotal: state.rowsTotal, log, now });
      if (!ours) throw new NotOurs();
      staged.adopt(log ?? state.log);
    });
  } catch (err) {
    if (err instanceof NotOurs) return false;
    throw err;
  }
  return true;
}

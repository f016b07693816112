/**
 * One batch of a sync written through the single write path — events (prepared by
 * event-reader.ts) via storeEventRows, people/groups via the profile write path — together with
 * the run's counts and checkpoint in ONE transaction, so a crash either keeps both or neither.
 */
import type { Row } from '../../connectors/warehouse.js';
import type { Db } from '../db/knex.js';
import type { EventStore } from '../store/event-store.js';
import { writeThenRecord } from '../store/write-then-record.js';
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

export type Trx = Parameters<Parameters<Db['transaction']>[0]>[0];

/**
 * Records a staged batch with whatever holds the read — the run, or one partition of it — inside
 * the batch's transaction. Returns the bounded log to adopt, or false when the run (or the
 * partition's lease) is no longer ours: the batch then rolls back and the reader stops.
 */
export type BatchRecorder = (trx: Trx, staged: StagedBatch, state: SyncState, now: number) => Promise<string[] | false>;

/** An unpartitioned run's recorder: counts, checkpoint and log on the run row, fenced on the attempt. */
export function runRecorder(runId: string, attempt: number): BatchRecorder {
  return async (trx, staged, state, now) => {
    const log = staged.lines.length > 0 ? staged.log() : undefined;
    const ours = await recordProgress(trx, runId, attempt, { checkpoint: staged.checkpoint, ...staged.counts, rowsTotal: state.rowsTotal, log, now });
    return ours ? (log ?? state.log) : false;
  };
}

export interface BatchContext {
  db: Db;
  record: BatchRecorder;
  events: EventStore;
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

  return commitStaged(bc, state, staged, (trx, now) => write(bc, trx, staged, good, rowOf, now));
}

/** A batch's event-store write: joined to the batch's transaction, or run before it (store/write-then-record.ts). */
export interface BatchEventWrite {
  store: Pick<EventStore, 'joinsTransactions'>;
  write: (within: Trx | undefined, now: number) => Promise<void>;
}

/**
 * One transaction: the batch's writes, then its record (run or partition). False, with the
 * transaction rolled back, when the recorder says the run is no longer ours. `events`: the
 * batch's event-store write, which joins the transaction where the events live in DATABASE_URL
 * and runs just before it elsewhere.
 */
export async function commitStaged(
  bc: Pick<BatchContext, 'db' | 'record'>,
  state: SyncState,
  staged: StagedBatch,
  writeBatch: (trx: Trx, now: number) => Promise<void>,
  events?: BatchEventWrite,
): Promise<boolean> {
  const now = Date.now();
  try {
    await writeThenRecord(
      bc.db,
      events?.store ?? { joinsTransactions: true },
      async (within) => events?.write(within, now),
      async (trx) => {
        await writeBatch(trx, now);
        staged.settle();
        const log = await bc.record(trx, staged, state, now);
        if (!log) throw new NotOurs();
        staged.adopt(log);
      },
    );
  } catch (err) {
    if (err instanceof NotOurs) return false;
    throw err;
  }
  return true;
}

async function write(
  bc: BatchContext,
  trx: Trx,
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
  bc: Pick<BatchContext, 'db' | 'events' | 'record' | 'projectId'>,
  state: SyncState,
  batch: PreparedEventBatch,
): Promise<boolean> {
  const staged = state.stage();
  for (const r of batch.rejected) staged.reject(r.row, r.field, r.message);
  if (batch.maxInsertTime !== undefined) staged.seeInsertTime(batch.maxInsertTime);
  staged.read(batch.read);
  return commitStaged(bc, state, staged, async () => {}, {
    store: bc.events,
    write: async (within, now) => {
      const stored = await storeEventRows(bc.events, bc.projectId, 'warehouse-import', batch.rows, now, within);
      staged.counts.numImported += stored.imported;
      staged.counts.numDeduplicated += stored.deduplicated;
    },
  });
}

/**
 * Triggering sync runs (manual-sync and the scheduler share this). The run row is written in SQL
 * first, then its job is enqueued with the payload `{runId}` and a job id derived from the run:
 * enqueueing twice is a no-op, and if Redis is down the reconciler enqueues the run later.
 */
import { enqueueWithin } from '../queue/enqueue-deadline.js';
import crypto from 'node:crypto';
import {
  findActiveRun,
  findRun,
  findSlotRun,
  insertRunIfFree,
  lockImportTriggers,
  type RunTrigger,
  type SyncRun,
} from '../db/sync-runs.repo.js';
import type { Db, DbOrTrx } from '../db/knex.js';
import { keepImport, type WarehouseImport } from '../db/warehouse.repo.js';
import { NotFoundError } from '../lib/errors.js';
import { isoTime } from '../domain/iso-time.js';
import { logLine } from '../domain/sync-log.js';
import type { Logger } from '../lib/logger.js';
import { warehouseSyncJobId } from '../queue/job-ids.js';
import { syncRunLabel } from '../queue/job-labels.js';
import type { JobQueues } from '../queue/queues.js';

export interface TriggerDeps {
  db: Db;
  queues: JobQueues;
  log: Logger;
}

export interface TriggerOutcome {
  run: SyncRun;
  /** false: an existing run was returned (already active, or the slot already fired). */
  created: boolean;
  /** Scheduled only: why the slot did not start a sync (set for the trigger that recorded the skip). */
  skipped?: string;
}

/**
 * Enqueues a run's job; never throws. With Redis unreachable the run stays QUEUED in SQL and the
 * reconciler enqueues it once Redis is back, so a trigger still succeeds.
 */
export async function enqueueRun(deps: Pick<TriggerDeps, 'queues' | 'log'>, run: Pick<SyncRun, 'id' | 'jobId' | 'projectId' | 'importId'>): Promise<boolean> {
  try {
    await enqueueWithin(deps.queues.enqueue('warehouse-sync', { runId: run.id }, { jobId: run.jobId, label: syncRunLabel(run) }));
    return true;
  } catch (err) {
    deps.log.warn({ err, runId: run.id }, 'warehouse sync: enqueue failed; the reconciler will enqueue the run');
    return false;
  }
}

/**
 * A trigger's own rule (a manual sync's one_time and per-hour limits), checked in the trigger's
 * transaction once the insert was tried: `created` says whether `run` is the new run or the
 * active one being returned. Throwing fails the trigger and rolls the new run back.
 */
export type TriggerCheck = (trx: DbOrTrx, outcome: { created: boolean; run: SyncRun }) => Promise<void>;

/**
 * Creates a QUEUED run for the import and enqueues it — unless the import already has a QUEUED
 * or RUNNING run (that one is returned; for a schedule slot, the slot is recorded as a CANCELLED
 * run saying it was skipped) or, with `slot`, another scheduler already created this slot's run.
 * Race-safe: both rules are unique indexes, so concurrent triggers insert at most one row. The
 * insert and `check` run in one transaction that holds the import's trigger lock and keeps the
 * import from being deleted (lockImportTriggers, keepImport): an import deleted meanwhile, or
 * with its source, is a NotFoundError, never a foreign-key error; the job is enqueued after the
 * commit.
 */
export async function triggerRun(deps: TriggerDeps, imp: WarehouseImport, trigger: RunTrigger, slot?: number, check?: TriggerCheck): Promise<TriggerOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const decided = await deps.db.transaction((trx) => tryTrigger(trx, imp, trigger, slot, check));
    if (decided) {
      if (decided.enqueue) await enqueueRun(deps, decided.outcome.run);
      return decided.outcome;
    }
    // The active run finished between our insert and our look-up: try again.
  }
  throw new Error(`could not create a sync run for import ${imp.id}: too much contention`);
}

async function tryTrigger(
  trx: DbOrTrx,
  imp: WarehouseImport,
  trigger: RunTrigger,
  slot: number | undefined,
  check: TriggerCheck | undefined,
): Promise<{ outcome: TriggerOutcome; enqueue: boolean } | undefined> {
  await lockImportTriggers(trx, imp.id);
  if (!(await keepImport(trx, imp.id))) throw new NotFoundError(`warehouse import ${imp.id} not found in project ${imp.projectId}`);
  const now = Date.now();
  const id = crypto.randomUUID();
  const jobId = warehouseSyncJobId(id);
  const what = trigger === 'scheduled' ? `scheduled sync for slot ${isoTime(slot!)}` : 'manual sync';
  const inserted = await insertRunIfFree(trx, {
    id,
    importId: imp.id,
    projectId: imp.projectId,
    trigger,
    slot,
    jobId,
    log: [logLine(now, `${what} queued: run ${id}, job ${jobId}`)],
    now,
  });
  if (inserted) {
    const run = (await findRun(trx, id))!;
    await check?.(trx, { created: true, run });
    return { outcome: { run, created: true }, enqueue: true };
  }
  if (slot !== undefined) {
    const fired = await findSlotRun(trx, imp.id, slot);
    if (fired) return { outcome: { run: fired, created: false }, enqueue: false };
  }
  const active = await findActiveRun(trx, imp.id);
  if (!active) return undefined;
  if (slot === undefined) {
    await check?.(trx, { created: false, run: active });
    // Heals a job Redis lost; a no-op while the job exists.
    return { outcome: { run: active, created: false }, enqueue: true };
  }
  const reason = `skipped: the previous sync (run ${active.id}) was still ${active.status.toLowerCase()}`;
  const skipId = crypto.randomUUID();
  const recordedHere = await insertRunIfFree(trx, {
    id: skipId,
    importId: imp.id,
    projectId: imp.projectId,
    trigger,
    slot,
    status: 'CANCELLED',
    jobId: warehouseSyncJobId(skipId),
    log: [logLine(now, `scheduled sync for slot ${isoTime(slot)} ${reason}`)],
    error: reason,
    now,
  });
  const recorded = await findSlotRun(trx, imp.id, slot);
  // `skipped` only for the scheduler whose row recorded the skip; another one just finds the slot taken.
  return recorded ? { outcome: { run: recorded, created: false, skipped: recordedHere ? reason : undefined }, enqueue: false } : undefined;
}

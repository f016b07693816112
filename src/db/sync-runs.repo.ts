/**
 * Sync runs: the system of record of every warehouse sync. A run row exists before its job is
 * enqueued; the worker writes status, counts, checkpoint and a bounded log to it. Two unique
 * indexes make triggering race-safe: one QUEUED/RUNNING run per import, one run per schedule slot.
 */
import { dialect, lockedOnPostgres, parseJson, toJson, toNumber, type Db, type DbOrTrx } from './knex.js';
import { recordRunWorker } from './run-workers.repo.js';

export const RUN_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type RunTrigger = 'manual' | 'scheduled';
export const ACTIVE_STATUSES: readonly RunStatus[] = ['QUEUED', 'RUNNING'];

/** Committed with every batch; a retried run starts from it. */
export interface SyncCheckpoint {
  /**
   * Source rows of the read already committed. Not a resume position: a position in a table that
   * may have changed since names no fixed row, so a retried attempt re-reads from the first row
   * (what it finds committed already is deduplicated, or the same in a mirror's snapshot).
   */
  offset: number;
  /**
   * Append events, after a re-read began: how many of the duplicates it finds are events the
   * earlier attempts stored themselves (not counted as duplicates; what is left of it).
   */
  discount?: number;
  /** mirror: the whole table was read and marked; an attempt after this only finishes the sweep. */
  readDone?: boolean;
  /** time_based: the watermark the run reads after (fixed when the run first starts). */
  after?: string | number | null;
  /** time_based: the greatest insert-time value committed so far (becomes the watermark on success). */
  maxInsertTime?: string | number;
  /** Rejected-row samples already written to the log. */
  samples?: number;
  /** A partitioned run: how many partitions it was split into (run_partitions rows, kind 'sync'). */
  partitions?: number;
  /** mirror with native change tracking: the source's clock (epoch ms) before this run read; the next run's changes start there. */
  changePoint?: number;
  /** mirror: change tracking could not answer, so this run reads the whole table (snapshot diff). */
  fullRead?: boolean;
}

export interface SyncRun {
  id: string;
  importId: number;
  projectId: number;
  trigger: RunTrigger;
  slot: number | null;
  status: RunStatus;
  jobId: string;
  attempts: number;
  rowsTotal: number | null;
  rowsRead: number;
  rowsSkipped: number;
  numImported: number;
  numDeduplicated: number;
  /** Mirror runs: rows whose stored event or profile was replaced, and vanished rows deleted. */
  numUpdated: number;
  numDeleted: number;
  checkpoint: SyncCheckpoint;
  log: string[];
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
}

const nullableNumber = (v: unknown) => (v === null || v === undefined ? null : toNumber(v));

function toRun(r: Record<string, unknown>): SyncRun {
  return {
    id: r.id as string,
    importId: toNumber(r.import_id),
    projectId: toNumber(r.project_id),
    trigger: r.trigger as RunTrigger,
    slot: nullableNumber(r.slot),
    status: r.status as RunStatus,
    jobId: r.job_id as string,
    attempts: toNumber(r.attempts),
    rowsTotal: nullableNumber(r.rows_total),
    rowsRead: toNumber(r.rows_read),
    rowsSkipped: toNumber(r.rows_skipped),
    numImported: toNumber(r.num_imported),
    numDeduplicated: toNumber(r.num_deduplicated),
    numUpdated: toNumber(r.num_updated ?? 0),
    numDeleted: toNumber(r.num_deleted ?? 0),
    checkpoint: parseJson<SyncCheckpoint>(r.checkpoint),
    log: parseJson<string[]>(r.log),
    error: (r.error as string | null) ?? null,
    createdAt: toNumber(r.created_at),
    startedAt: nullableNumber(r.started_at),
    finishedAt: nullableNumber(r.finished_at),
    updatedAt: toNumber(r.updated_at),
  };
}

export interface NewRun {
  id: string;
  importId: number;
  projectId: number;
  trigger: RunTrigger;
  slot?: number;
  status?: RunStatus;
  jobId: string;
  log: string[];
  error?: string;
  now: number;
}

/**
 * Inserts the run unless it would be a second active run of the import or a second run of the
 * same slot (ON CONFLICT DO NOTHING on either unique index). Returns whether it was inserted.
 */
export async function insertRunIfFree(db: DbOrTrx, run: NewRun): Promise<boolean> {
  const status = run.status ?? 'QUEUED';
  const terminal = !ACTIVE_STATUSES.includes(status);
  const rows = await db('sync_runs')
    .insert({
      id: run.id,
      import_id: run.importId,
      project_id: run.projectId,
      trigger: run.trigger,
      slot: run.slot ?? null,
      status,
      job_id: run.jobId,
      checkpoint: toJson({ offset: 0 }),
      log: toJson(run.log),
      error: run.error ?? null,
      created_at: run.now,
      finished_at: terminal ? run.now : null,
      updated_at: run.now,
    })
    .onConflict()
    .ignore()
    .returning('id');
  return rows.length > 0;
}

export async function findRun(db: DbOrTrx, id: string): Promise<SyncRun | undefined> {
  const row = await db('sync_runs').where({ id }).first();
  return row ? toRun(row) : undefined;
}

export async function findActiveRun(db: DbOrTrx, importId: number): Promise<SyncRun | undefined> {
  const row = await db('sync_runs').where({ import_id: importId }).whereIn('status', ACTIVE_STATUSES).first();
  return row ? toRun(row) : undefined;
}

export async function findSlotRun(db: DbOrTrx, importId: number, slot: number): Promise<SyncRun | undefined> {
  const row = await db('sync_runs').where({ import_id: importId, slot }).first();
  return row ? toRun(row) : undefined;
}

/** Creation times (ascending) of the import's manual runs created at or after `since` (but `exceptRunId`). */
export async function manualRunTimesSince(db: DbOrTrx, importId: number, since: number, exceptRunId?: string): Promise<number[]> {
  const q = db('sync_runs').where({ import_id: importId, trigger: 'manual' }).where('created_at', '>=', since);
  if (exceptRunId !== undefined) q.whereNot({ id: exceptRunId });
  const rows = await q.orderBy('created_at').select('created_at');
  return rows.map((r: Record<string, unknown>) => toNumber(r.created_at));
}

const TRIGGER_LOCK_SPACE = 0x74726967;

/**
 * Serialises the triggers of one import (manual and scheduled) and its deletion until the
 * transaction ends: a PostgreSQL advisory lock, taken before any row lock so it never waits
 * behind one (SQLite: its transactions begin IMMEDIATE and run one at a time). What a trigger
 * decides from the import's runs (one_time already done, runs in the last hour) then still holds
 * when it inserts.
 */
export async function lockImportTriggers(db: DbOrTrx, importId: number): Promise<void> {
  if (dialect(db) === 'postgres') await db.raw('SELECT pg_advisory_xact_lock(?::int, ?::int)', [TRIGGER_LOCK_SPACE, importId & 0x7fffffff]);
}

/** Per import, the latest schedule slot that has a run (fired, skipped or failed). */
export async function latestScheduledSlots(db: DbOrTrx): Promise<Map<number, number>> {
  const rows = await db('sync_runs').whereNotNull('slot').groupBy('import_id').select('import_id', db.raw('max(slot) as slot'));
  return new Map(rows.map((r: Record<string, unknown>) => [toNumber(r.import_id), toNumber(r.slot)]));
}

export async function listRuns(db: DbOrTrx, importId: number, limit = 100): Promise<SyncRun[]> {
  const rows = await db('sync_runs').where({ import_id: importId }).orderBy('created_at', 'desc').orderBy('id').limit(limit);
  return rows.map(toRun);
}

export async function hasSucceededRun(db: DbOrTrx, importId: number): Promise<boolean> {
  return (await db('sync_runs').where({ import_id: importId, status: 'SUCCEEDED' }).first('id')) !== undefined;
}

/** Every QUEUED or RUNNING run (the reconciler's view). */
export async function listActiveRuns(db: DbOrTrx): Promise<{ id: string; jobId: string; projectId: number; importId: number; partitions: number }[]> {
  const rows = await db('sync_runs').whereIn('status', ACTIVE_STATUSES).select('id', 'job_id', 'project_id', 'import_id', 'checkpoint');
  return rows.map((r) => ({
    id: r.id as string,
    jobId: r.job_id as string,
    projectId: toNumber(r.project_id),
    importId: toNumber(r.import_id),
    partitions: parseJson<SyncCheckpoint>(r.checkpoint).partitions ?? 0,
  }));
}

/** What an attempt starts with: the checkpoint it resumes from and the run's log with its first line. */
export interface AttemptStart {
  checkpoint: SyncCheckpoint;
  log: string[];
}

/**
 * QUEUED (or RUNNING, when its worker died) → RUNNING as attempt `seen + 1`, where `seen` is the
 * attempts the caller read; undefined when the run is no longer active or another worker started
 * an attempt since (that one carries the run; taking it over would only start a tug of war). The row is read and written in one transaction, locked (PostgreSQL `FOR
 * UPDATE`; SQLite transactions take the write lock at BEGIN), and `start` builds the attempt's
 * checkpoint and log from the row as it is then. Read before and written after, a batch that
 * the attempt being fenced out committed in between (its Redis lock lost, the process still
 * running) was rewound and read again, and its rows counted twice.
 */
export async function startAttempt(
  db: Db,
  id: string,
  seen: number,
  fields: { now: number; worker?: string },
  start: (run: SyncRun, attempt: number) => AttemptStart,
): Promise<(AttemptStart & { run: SyncRun; attempt: number }) | undefined> {
  return db.transaction(async (trx) => {
    const q = trx('sync_runs').where({ id });
    const row = await lockedOnPostgres(trx, q).first();
    const run = row ? toRun(row) : undefined;
    if (!run || run.attempts !== seen || !ACTIVE_STATUSES.includes(run.status)) return undefined;
    const attempt = run.attempts + 1;
    const begun = start(run, attempt);
    await trx('sync_runs')
      .where({ id })
      .update({
        status: 'RUNNING',
        attempts: attempt,
        started_at: trx.raw('COALESCE(started_at, ?)', [fields.now]),
        checkpoint: toJson(begun.checkpoint),
        log: toJson(begun.log),
        error: null,
        updated_at: fields.now,
      });
    if (fields.worker) await recordRunWorker(trx, 'sync', id, fields.worker);
    return { ...begun, run, attempt };
  });
}

export interface Counts {
  rowsRead: number;
  rowsSkipped: number;
  numImported: number;
  numDeduplicated: number;
  /** Mirror runs only (0 otherwise). */
  numUpdated: number;
  numDeleted: number;
}

export const COUNT_FIELDS = ['rowsRead', 'rowsSkipped', 'numImported', 'numDeduplicated', 'numUpdated', 'numDeleted'] as const satisfies readonly (keyof Counts)[];

export const ZERO_COUNTS: Readonly<Counts> = { rowsRead: 0, rowsSkipped: 0, numImported: 0, numDeduplicated: 0, numUpdated: 0, numDeleted: 0 };

/** `a - b`, field by field. */
export function countsDelta(a: Counts, b: Counts): Counts {
  return Object.fromEntries(COUNT_FIELDS.map((f) => [f, a[f] - b[f]])) as unknown as Counts;
}

export interface RunProgress extends Counts {
  checkpoint: SyncCheckpoint;
  rowsTotal?: number | null;
  log?: string[];
  now: number;
}

function progressColumns(p: RunProgress): Record<string, unknown> {
  const row: Record<string, unknown> = {
    checkpoint: toJson(p.checkpoint),
    rows_read: p.rowsRead,
    rows_skipped: p.rowsSkipped,
    num_imported: p.numImported,
    num_deduplicated: p.numDeduplicated,
    num_updated: p.numUpdated,
    num_deleted: p.numDeleted,
    updated_at: p.now,
  };
  if (p.rowsTotal !== undefined) row.rows_total = p.rowsTotal;
  if (p.log) row.log = toJson(p.log);
  return row;
}

/**
 * Records a committed batch (call in the batch's transaction). `attempt` fences: a newer attempt
 * of the same run (a stalled job picked up elsewhere) bumped `attempts`, so an older one's write
 * matches nothing. Returns false when the run is no longer this attempt's — cancelled, deleted or
 * superseded — and the caller rolls the batch back and stops.
 */
export async function recordProgress(db: DbOrTrx, id: string, attempt: number, p: RunProgress): Promise<boolean> {
  const n = await db('sync_runs').where({ id, status: 'RUNNING', attempts: attempt }).update(progressColumns(p));
  return n > 0;
}

/**
 * A partition's committed batch, added to its run's counts (call in the batch's transaction):
 * increments, so partitions committing at once on several workers never overwrite each other.
 * False when the run is no longer RUNNING (failed by another partition, cancelled, deleted).
 */
export async function addRunCounts(db: DbOrTrx, id: string, delta: Counts, now: number): Promise<boolean> {
  const n = await db('sync_runs')
    .where({ id, status: 'RUNNING' })
    .update({
      rows_read: db.raw('rows_read + ?', [delta.rowsRead]),
      rows_skipped: db.raw('rows_skipped + ?', [delta.rowsSkipped]),
      num_imported: db.raw('num_imported + ?', [delta.numImported]),
      num_deduplicated: db.raw('num_deduplicated + ?', [delta.numDeduplicated]),
      num_updated: db.raw('num_updated + ?', [delta.numUpdated]),
      num_deleted: db.raw('num_deleted + ?', [delta.numDeleted]),
      updated_at: now,
    });
  return n > 0;
}

/**
 * The run row, locked for the rest of the transaction on PostgreSQL (SQLite has one writer):
 * partitions appending log lines or deciding which of them finishes the run go one at a time.
 */
export async function lockRun(db: DbOrTrx, id: string): Promise<SyncRun | undefined> {
  const q = db('sync_runs').where({ id });
  const row = await lockedOnPostgres(db, q).first();
  return row ? toRun(row) : undefined;
}

export async function setRunLog(db: DbOrTrx, id: string, log: string[], now: number): Promise<void> {
  await db('sync_runs').where({ id }).update({ log: toJson(log), updated_at: now });
}

/** Ends a run (SUCCEEDED, FAILED, CANCELLED) or sends it back to QUEUED for a retry. */
export async function finishRun(
  db: DbOrTrx,
  id: string,
  status: RunStatus,
  fields: Partial<RunProgress> & { error?: string | null; log: string[]; now: number },
  /** Fence on the attempt that is finishing (see recordProgress); omit to finish whatever attempt. */
  attempt?: number,
): Promise<boolean> {
  const row: Record<string, unknown> = { status, log: toJson(fields.log), updated_at: fields.now };
  if (fields.checkpoint) Object.assign(row, progressColumns(fields as RunProgress));
  if (fields.error !== undefined) row.error = fields.error;
  if (!ACTIVE_STATUSES.includes(status)) row.finished_at = fields.now;
  const q = db('sync_runs').where({ id }).whereIn('status', ACTIVE_STATUSES);
  if (attempt !== undefined) q.andWhere({ attempts: attempt });
  return (await q.update(row)) > 0;
}

/**
 * Mirror changes of a project's runs in a month (`YYYY-MM`, UTC, by the run's last update):
 * stored events replaced and deleted, counted apart from the newly stored ones (usage).
 */
export async function mirrorChangesForMonth(db: DbOrTrx, projectId: number, month: string): Promise<{ updated: number; deleted: number }> {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const row = await db('sync_runs')
    .where('project_id', projectId)
    .where('updated_at', '>=', Date.UTC(y, m - 1, 1))
    .where('updated_at', '<', Date.UTC(y, m, 1))
    .sum({ updated: 'num_updated', deleted: 'num_deleted' })
    .first();
  return { updated: toNumber(row?.updated ?? 0), deleted: toNumber(row?.deleted ?? 0) };
}

/** Marks the import's active run CANCELLED (import deleted or paused by a user). */
export async function cancelActiveRuns(db: DbOrTrx, importId: number, reason: string, now: number): Promise<number> {
  return db('sync_runs')
    .where({ import_id: importId })
    .whereIn('status', ACTIVE_STATUSES)
    .update({ status: 'CANCELLED', error: reason, finished_at: now, updated_at: now });
}

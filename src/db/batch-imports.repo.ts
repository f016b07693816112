/**
 * Batch import runs. `records_done` is the checkpoint: it only moves through `advanceCheckpoint`,
 * a compare-and-set inside the chunk's own transaction, so two workers that both believe they
 * own a run (a Redis loss re-enqueued it while the first still ran) can never both commit the
 * same chunk — the loser's transaction rolls back with its inserts.
 */
import { lockedOnPostgres, parseJson, toJson, toNumber, type Db, type DbOrTrx } from './knex.js';
import { logLine } from '../domain/sync-log.js';
import { appendBoundedLog, withLine } from './run-log.repo.js';
import { recordRunWorker } from './run-workers.repo.js';

export type BatchImportType = 'events' | 'people' | 'groups';
export type BatchImportFormat = 'ndjson' | 'json' | 'csv';
export type BatchImportStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface RejectedSample {
  /** 0-based position of the record in the file (CSV: data rows, header excluded). */
  index: number;
  field?: string;
  message: string;
  /** The record as sent, cut to a few hundred characters. */
  record?: string;
}

export interface BatchImport {
  id: string;
  projectId: number;
  type: BatchImportType;
  format: BatchImportFormat;
  compression: 'none' | 'gzip';
  strict: boolean;
  filePath: string;
  fileBytes: number;
  recordsTotal: number;
  status: BatchImportStatus;
  jobId: string;
  recordsDone: number;
  imported: number;
  deduplicated: number;
  rejected: number;
  rejectedSample: RejectedSample[];
  log: string[];
  error: string | null;
  attempts: number;
  createdBy: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
}

/** Rejected records kept per run, and log lines kept per run. */
export const REJECTED_SAMPLE_MAX = 100;
export const RUN_LOG_MAX = 100;

const TABLE = 'batch_imports';

function fromRow(r: Record<string, unknown>): BatchImport {
  const num = (v: unknown) => (v === null || v === undefined ? null : toNumber(v));
  return {
    id: r.id as string,
    projectId: toNumber(r.project_id),
    type: r.type as BatchImportType,
    format: r.format as BatchImportFormat,
    compression: r.compression as 'none' | 'gzip',
    strict: Boolean(r.strict),
    filePath: r.file_path as string,
    fileBytes: toNumber(r.file_bytes),
    recordsTotal: toNumber(r.records_total),
    status: r.status as BatchImportStatus,
    jobId: r.job_id as string,
    recordsDone: toNumber(r.records_done),
    imported: toNumber(r.num_imported),
    deduplicated: toNumber(r.num_deduplicated),
    rejected: toNumber(r.num_rejected),
    rejectedSample: parseJson<RejectedSample[]>(r.rejected_sample) ?? [],
    log: parseJson<string[]>(r.log) ?? [],
    error: (r.error as string | null) ?? null,
    attempts: toNumber(r.attempts),
    createdBy: (r.created_by as string | null) ?? null,
    createdAt: toNumber(r.created_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    updatedAt: toNumber(r.updated_at),
  };
}

export interface NewBatchImport {
  id: string;
  projectId: number;
  type: BatchImportType;
  format: BatchImportFormat;
  compression: 'none' | 'gzip';
  strict: boolean;
  filePath: string;
  fileBytes: number;
  recordsTotal: number;
  jobId: string;
  createdBy: string | null;
  now: number;
}

export async function createBatchImport(db: DbOrTrx, n: NewBatchImport): Promise<BatchImport> {
  await db(TABLE).insert({
    id: n.id,
    project_id: n.projectId,
    type: n.type,
    format: n.format,
    compression: n.compression,
    strict: n.strict,
    file_path: n.filePath,
    file_bytes: n.fileBytes,
    records_total: n.recordsTotal,
    status: 'queued',
    job_id: n.jobId,
    rejected_sample: toJson([]),
    log: toJson([logLine(n.now, `queued: ${n.recordsTotal} records (${n.format}${n.compression === 'gzip' ? ', gzip' : ''})`)]),
    created_by: n.createdBy,
    created_at: n.now,
    updated_at: n.now,
  });
  return (await findBatchImport(db, n.id))!;
}

export async function findBatchImport(db: DbOrTrx, id: string): Promise<BatchImport | undefined> {
  const row = await db(TABLE).where({ id }).first();
  return row ? fromRow(row) : undefined;
}

export async function listBatchImports(db: DbOrTrx, projectId: number, limit: number): Promise<BatchImport[]> {
  const rows = await db(TABLE).where({ project_id: projectId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
  return rows.map(fromRow);
}

/** Ids of runs SQL says are not finished: what the reconciler makes sure Redis has a job for. */
export async function unfinishedBatchImports(db: DbOrTrx): Promise<string[]> {
  const rows = await db(TABLE).whereIn('status', ['queued', 'running']).select('id');
  return rows.map((r) => r.id as string);
}

/** Marks a queued or running run as running (one more attempt, by `worker`); undefined when it is finished. */
export async function startBatchImport(db: DbOrTrx, id: string, now: number, worker: string): Promise<BatchImport | undefined> {
  const n = await db(TABLE)
    .where({ id })
    .whereIn('status', ['queued', 'running'])
    .update({ status: 'running', attempts: db.raw('attempts + 1'), started_at: db.raw('coalesce(started_at, ?)', [now]), updated_at: now });
  if (n === 0) return undefined;
  await recordRunWorker(db, 'batch-import', id, worker);
  return findBatchImport(db, id);
}

/**
 * Compare-and-set of the checkpoint from `from` to `to`; call first inside the chunk's
 * transaction, before its writes (on Postgres the row lock then serialises competing workers,
 * on SQLite the single writer does). False: someone else moved the checkpoint — roll back.
 */
export async function claimChunk(trx: DbOrTrx, id: string, from: number, to: number, now: number): Promise<boolean> {
  // 'queued' too: a worker that lost its job may have put the run back to queued meanwhile.
  const n = await trx(TABLE)
    .where({ id, records_done: from })
    .whereIn('status', ['queued', 'running'])
    .update({ records_done: to, status: 'running', updated_at: now });
  return n > 0;
}

/**
 * A partition's chunk: adds its units to the run's records_done (call in the chunk's transaction
 * after the partition's own claim); false when the run is no longer running.
 */
export async function addRecordsDone(trx: DbOrTrx, id: string, units: number, now: number): Promise<boolean> {
  const n = await trx(TABLE).where({ id, status: 'running' }).update({ records_done: trx.raw('records_done + ?', [units]), updated_at: now });
  return n > 0;
}

/** The run row, locked for the rest of the transaction on PostgreSQL (SQLite has one writer). */
export async function lockBatchImport(trx: DbOrTrx, id: string): Promise<BatchImport | undefined> {
  const q = trx(TABLE).where({ id });
  const row = await lockedOnPostgres(trx, q).first();
  return row ? fromRow(row) : undefined;
}

export interface ChunkOutcome {
  imported: number;
  deduplicated: number;
  rejected: number;
  /** New rejections for the bounded sample (only what fits is kept). */
  sample: RejectedSample[];
}

/** Adds a chunk's counts and rejections to the run, in the transaction that claimed it. */
export async function recordChunk(trx: DbOrTrx, id: string, c: ChunkOutcome): Promise<void> {
  await trx(TABLE)
    .where({ id })
    .update({
      num_imported: trx.raw('num_imported + ?', [c.imported]),
      num_deduplicated: trx.raw('num_deduplicated + ?', [c.deduplicated]),
      num_rejected: trx.raw('num_rejected + ?', [c.rejected]),
    });
  if (c.sample.length === 0) return;
  const row = await trx(TABLE).where({ id }).first('rejected_sample');
  const current = parseJson<RejectedSample[]>(row?.rejected_sample) ?? [];
  // Partitions finish in any order: keep the earliest rejections by file position so the
  // sample is the same however the work was split.
  const next = current
    .concat(c.sample)
    .sort((a, b) => a.index - b.index)
    .slice(0, REJECTED_SAMPLE_MAX);
  await trx(TABLE).where({ id }).update({ rejected_sample: toJson(next) });
}

/** Appends to the run's bounded log (the newest RUN_LOG_MAX lines are kept). */
export async function appendRunLog(db: DbOrTrx, id: string, line: string, now: number): Promise<void> {
  await appendBoundedLog(db, TABLE, id, line, now, RUN_LOG_MAX);
}

/**
 * Moves an unfinished run to a final or waiting status, with a log line in the same write.
 * `expectDone` fences the write the same way as the checkpoint: only the worker that holds the
 * current checkpoint may finish the run.
 */
export async function setBatchImportStatus(
  db: Db,
  id: string,
  status: BatchImportStatus,
  opts: { now: number; error?: string; expectDone?: number; line?: string },
): Promise<boolean> {
  return db.transaction(async (trx) => {
    let q = trx(TABLE).where({ id }).whereIn('status', ['queued', 'running']);
    if (opts.expectDone !== undefined) q = q.andWhere('records_done', opts.expectDone);
    // Locked like an append (run-log.repo.ts), so a line appended meanwhile is not overwritten.
    const row = await lockedOnPostgres(trx, q.clone()).first('log');
    if (!row) return false;
    const final = status === 'succeeded' || status === 'failed';
    const log = opts.line ? withLine(row.log, opts.now, opts.line, RUN_LOG_MAX) : undefined;
    const n = await q.update({
      status,
      error: opts.error ?? null,
      finished_at: final ? opts.now : null,
      updated_at: opts.now,
      ...(log ? { log: toJson(log) } : {}),
    });
    return n > 0;
  });
}

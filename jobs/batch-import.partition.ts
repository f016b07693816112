/**
 * Partitioned batch imports: what a batch import supplies to the run machinery — plan byte
 * ranges of whole lines (uncompressed NDJSON over SYNC_PARTITION_ROWS records; gzip, JSON arrays
 * and CSV are read whole, they cannot be entered in the middle), read one range, commit it chunk
 * by chunk with the partition's own checkpoint and the run's counts in one transaction. The last
 * partition done marks the run succeeded (under its row lock) and deletes the file; a partition
 * that fails for good fails the run with its error.
 */
import fs from 'node:fs';
import {
  addRecordsDone,
  appendRunLog,
  findBatchImport,
  lockBatchImport,
  setBatchImportStatus,
  type BatchImport,
} from '../src/db/batch-imports.repo.js';
import type { DbOrTrx } from '../src/db/knex.js';
import {
  allPartitionsDone,
  finishPartition,
  insertPartitions,
  listPartitions,
  partitionSummaries,
  recordPartition,
  startPartition,
  type PartitionKey,
} from '../src/db/run-partitions.repo.js';
import { commitChunk, type ChunkClaim, type ReadyChunk } from '../src/ingest/batch-import.chunk.js';
import { fileIsGzipped, planNdjsonRanges, readNdjsonRange, type NdjsonRange } from '../src/ingest/batch-file.reader.js';
import { errorMessage, PermanentError, RetryableError } from '../src/lib/errors.js';
import { batchImportFinishJobId, batchImportPartJobId } from '../src/queue/job-ids.js';
import { batchImportLabel } from '../src/queue/job-labels.js';
import { endsRun, interruptionCause, isFinalAttempt } from '../src/runs/failure.js';
import { flowProgress, partitionLabel, workerId } from '../src/runs/partitions.js';
import { percentDone } from '../src/runs/board-progress.js';
import { ChunkPipeline, chunkPreparer } from './batch-import.chunks.js';
import type { JobContext } from './types.js';

const KIND = 'batch-import' as const;

type PartCheckpoint = { done: number };

/** Whether this run is (or was planned as) partitioned. */
export async function isPartitioned(db: DbOrTrx, importId: string): Promise<boolean> {
  return (await db('run_partitions').where({ kind: KIND, run_id: importId }).first('idx')) !== undefined;
}

/**
 * Plans a partitioned import when the file is uncompressed NDJSON over SYNC_PARTITION_ROWS
 * records and nothing of it is committed yet. Returns false to import it whole.
 */
export async function planBatchPartitions(run: BatchImport, ctx: JobContext): Promise<boolean> {
  const limit = ctx.config.SYNC_PARTITION_ROWS;
  if (run.format !== 'ndjson' || run.recordsDone > 0 || run.recordsTotal <= limit || fileIsGzipped(run.filePath)) return false;
  const ranges = await planNdjsonRanges(run.filePath, Math.ceil(run.recordsTotal / limit));
  if (ranges.length < 2) return false;
  await insertPartitions(ctx.db, KIND, run.id, ranges, { done: 0 }, Date.now());
  const line = `split into ${ranges.length} byte ranges of about ${limit} records (SYNC_PARTITION_ROWS)`;
  await appendRunLog(ctx.db, run.id, line, Date.now());
  await ctx.logLine(line);
  await enqueueBatchFlow(run, ctx);
  return true;
}

/** The import's flow: the finish job as parent, one child per partition not yet done (idempotent ids). */
export async function enqueueBatchFlow(run: Pick<BatchImport, 'id' | 'projectId'>, ctx: JobContext): Promise<void> {
  const parts = await listPartitions<NdjsonRange, PartCheckpoint>(ctx.db, KIND, run.id);
  const who = batchImportLabel(run.projectId, run.id);
  await ctx.queues.enqueueFlow(
    { name: 'batch-import-finish', payload: { importId: run.id }, options: { jobId: batchImportFinishJobId(run.id), label: `${who} (${parts.length} partitions)` } },
    parts
      .filter((p) => p.status === 'queued' || p.status === 'running')
      .map((p) => ({
        name: 'batch-import-part' as const,
        payload: { importId: run.id, part: p.idx },
        options: { jobId: batchImportPartJobId(run.id, p.idx), label: `${who} · ${partitionLabel(p.idx, p.total)}` },
      })),
  );
}

/** The partition's claim: its own checkpoint (fenced on its lease), then the run's records_done. */
function partitionClaim(key: PartitionKey, attempt: number, doneBefore: () => number): ChunkClaim {
  return async (trx, chunk, now) =>
    (await recordPartition(trx, key, attempt, { checkpoint: { done: doneBefore() + chunk.units }, counts: {}, now })) &&
    addRecordsDone(trx, key.runId, chunk.units, now);
}

export type BatchPartOutcome = 'done' | 'run-succeeded' | 'interrupted' | 'run-finished' | 'not-taken' | 'stopped';

/** The `batch-import-part` job: import one byte range; the last partition done finishes the run. */
export async function runBatchPartition({ importId, part }: { importId: string; part: number }, ctx: JobContext): Promise<BatchPartOutcome> {
  const run = await findBatchImport(ctx.db, importId);
  if (!run || run.status !== 'running') return 'run-finished';
  const key: PartitionKey = { kind: KIND, runId: importId, idx: part };
  const p = await startPartition<NdjsonRange, PartCheckpoint>(ctx.db, key, workerId(), Date.now());
  if (!p) return 'not-taken';
  const label = partitionLabel(p.idx, p.total);
  const attempt = p.attempts;
  let done = p.checkpoint.done; // units of this range committed
  await appendRunLog(ctx.db, importId, `${label} (job ${ctx.jobId}, attempt ${attempt}, worker ${p.worker}): ${done > 0 ? `resuming after record ${p.range.firstUnit + done}` : 'started'}`, Date.now());
  const claim = partitionClaim(key, attempt, () => done);
  try {
    let position = p.range.firstUnit;
    const commit = async (chunk: ReadyChunk): Promise<'interrupted' | undefined> => {
      if (ctx.signal.aborted) return 'interrupted';
      const result = await commitChunk(ctx.db, ctx.events, run, chunk, Date.now(), claim);
      if (!result.committed) throw new Superseded();
      done += chunk.units;
      await ctx.progress({ percent: percentDone(done, p.range.units ?? ctx.config.SYNC_PARTITION_ROWS), records_done: done, partition: p.idx + 1, partitions: p.total });
      if (ctx.parentProgress) await ctx.parentProgress(await runProgress(ctx, importId));
      return undefined;
    };
    // Fixed before reading: `done` grows while later chunks are still being read.
    const resumeAt = p.range.firstUnit + done;
    const pipeline = new ChunkPipeline(resumeAt, await chunkPreparer(run, ctx), commit);
    try {
      for await (const units of readNdjsonRange(run.filePath, p.range.start, p.range.end)) {
        for (const unit of units) {
          if (position++ < resumeAt) continue; // committed by an earlier lease
          pipeline.addJson(unit);
          if (pipeline.full && (await pipeline.cut())) return interrupted(ctx, key, attempt, label, done);
        }
      }
    } catch (err) {
      await pipeline.settle();
      throw err;
    }
    if (await pipeline.finish()) return interrupted(ctx, key, attempt, label, done);
    const succeeded = await ctx.db.transaction(async (trx) => {
      if (!(await finishPartition(trx, key, attempt, 'done', { error: null, now: Date.now() }))) throw new Superseded();
      return finishIfComplete(trx, importId);
    });
    if (succeeded) {
      fs.rmSync(run.filePath, { force: true });
      await ctx.logLine('succeeded');
    }
    if (ctx.parentProgress) await ctx.parentProgress(await runProgress(ctx, importId));
    return succeeded ? 'run-succeeded' : 'done';
  } catch (err) {
    if (err instanceof Superseded) {
      const now = await findBatchImport(ctx.db, importId);
      if (!now || now.status !== 'running') return 'stopped';
      throw new RetryableError(`${label} of batch import ${importId} was taken over by a newer lease`);
    }
    const message = errorMessage(err);
    if (ctx.signal.aborted) {
      await finishPartition(ctx.db, key, attempt, 'queued', { now: Date.now() }).catch(() => {});
      throw err;
    }
    const permanent = (err instanceof Error && err.name === 'BatchFileError') || (await endsRun(err, isFinalAttempt('batch-import-part', ctx.attempt), ctx));
    const now = Date.now();
    if (!permanent) {
      await finishPartition(ctx.db, key, attempt, 'queued', { error: message, now }).catch(() => {});
      await appendRunLog(ctx.db, importId, `${label} attempt ${attempt} failed: ${message}; will retry`, now).catch(() => {});
      throw err;
    }
    if (await finishPartition(ctx.db, key, attempt, 'failed', { error: message, now }).catch(() => false)) {
      const error = `${label}: ${message}`;
      await setBatchImportStatus(ctx.db, importId, 'failed', { now, error, line: `failed: ${error}` }).catch(() => {});
      fs.rmSync(run.filePath, { force: true });
    }
    throw new PermanentError(`${label}: ${message}`, { cause: err });
  }
}

class Superseded extends Error {}

async function interrupted(ctx: JobContext, key: PartitionKey, attempt: number, label: string, done: number): Promise<BatchPartOutcome> {
  await finishPartition(ctx.db, key, attempt, 'queued', { now: Date.now() });
  await appendRunLog(ctx.db, key.runId, `${label} interrupted after ${done} records (${interruptionCause(ctx.signal)}); will resume`, Date.now());
  return 'interrupted';
}

/** Under the run row's lock: every partition done → succeeded, with the final counts in the log. */
async function finishIfComplete(trx: DbOrTrx, importId: string): Promise<boolean> {
  const run = await lockBatchImport(trx, importId);
  if (!run || run.status !== 'running' || !(await allPartitionsDone(trx, KIND, importId))) return false;
  const line = `succeeded: ${run.imported} imported, ${run.deduplicated} duplicates, ${run.rejected} rejected (${(await listPartitions(trx, KIND, importId)).length} partitions)`;
  return setBatchImportStatus(trx as never, importId, 'succeeded', { now: Date.now(), line });
}

/** The `batch-import-finish` job (the flow's parent): a safety net, and 100 % on the board. */
export async function finishPartitionedImport({ importId }: { importId: string }, ctx: JobContext): Promise<string> {
  const run = await findBatchImport(ctx.db, importId);
  if (!run) return 'missing';
  if (run.status === 'running' && (await ctx.db.transaction((trx) => finishIfComplete(trx, importId)))) fs.rmSync(run.filePath, { force: true });
  await ctx.progress(await runProgress(ctx, importId));
  return (await findBatchImport(ctx.db, importId))?.status ?? 'missing';
}

async function runProgress(ctx: JobContext, importId: string) {
  const run = await findBatchImport(ctx.db, importId);
  const s = (await partitionSummaries(ctx.db, KIND, [importId])).get(importId) ?? { total: 0, done: 0 };
  return { ...flowProgress(s.done, s.total, run?.recordsDone ?? 0, run?.recordsTotal ?? null), status: run?.status };
}

/**
 * The batch-import handler: streams the uploaded file from the checkpoint on, in chunks of
 * BATCH_CHUNK_RECORDS records, each prepared while the one before commits (batch-import.chunks.ts)
 * and committed with its checkpoint (src/ingest/batch-import.chunk.ts). On shutdown it
 * stops between chunks and puts the run back to `queued`; any later attempt resumes where the
 * last committed chunk ended, so a crash, a deploy or a Redis loss never doubles or loses data.
 */
import fs from 'node:fs';
import {
  appendRunLog,
  findBatchImport,
  setBatchImportStatus,
  startBatchImport,
  type BatchImport,
} from '../src/db/batch-imports.repo.js';
import { commitChunk, type ReadyChunk } from '../src/ingest/batch-import.chunk.js';
import { BatchFileError, readUnits } from '../src/ingest/batch-file.reader.js';
import { errorMessage, PermanentError, RetryableError } from '../src/lib/errors.js';
import { endsRun, isFinalAttempt } from '../src/runs/failure.js';
import { workerId } from '../src/runs/partitions.js';
import { percentDone } from '../src/runs/board-progress.js';
import { ChunkPipeline, chunkPreparer } from './batch-import.chunks.js';
import { enqueueBatchFlow, isPartitioned, planBatchPartitions } from './batch-import.partition.js';
import type { JobContext, JobHandler } from './types.js';

/** Dashboard log lines: one every this many chunks (plus start, resume and end). */
const LOG_EVERY_CHUNKS = 10;

export type BatchImportOutcome = 'succeeded' | 'interrupted' | 'already-finished' | 'superseded' | 'partitioned';

async function say(ctx: JobContext, run: BatchImport, line: string): Promise<void> {
  ctx.log.info({ importId: run.id }, line);
  await ctx.logLine(line);
  await appendRunLog(ctx.db, run.id, line, Date.now());
}

async function fail(ctx: JobContext, run: BatchImport, message: string): Promise<void> {
  const line = `failed: ${message}`;
  await setBatchImportStatus(ctx.db, run.id, 'failed', { now: Date.now(), error: message, line });
  ctx.log.warn({ importId: run.id }, line);
  await ctx.logLine(line);
  fs.rmSync(run.filePath, { force: true });
}

export const batchImportHandler: JobHandler<'batch-import'> = async ({ importId }, ctx): Promise<BatchImportOutcome> => {
  const run = await startBatchImport(ctx.db, importId, Date.now(), workerId());
  if (!run) {
    const existing = await findBatchImport(ctx.db, importId);
    if (!existing) throw new PermanentError(`batch import ${importId} does not exist`);
    ctx.log.info({ importId, status: existing.status }, 'batch import already finished');
    return 'already-finished';
  }
  if (!fs.existsSync(run.filePath)) {
    await fail(ctx, run, 'the uploaded file is gone from UPLOAD_DIR (was the volume replaced?)');
    throw new PermanentError('uploaded file missing');
  }
  try {
    // A large uncompressed NDJSON file is split into byte ranges that any worker takes.
    if (await isPartitioned(ctx.db, run.id)) {
      await enqueueBatchFlow(run, ctx);
      return 'partitioned';
    }
    if (await planBatchPartitions(run, ctx)) return 'partitioned';
    return await importFile(run, ctx);
  } catch (err) {
    if (err instanceof BatchFileError) {
      await fail(ctx, run, err.message);
      throw new PermanentError(err.message);
    }
    if (err instanceof PermanentError) throw err;
    if (!ctx.signal.aborted && (await endsRun(err, isFinalAttempt('batch-import', ctx.attempt), ctx))) {
      await fail(ctx, run, `gave up after ${ctx.attempt} attempts: ${errorMessage(err)}`).catch(() => {});
    } else {
      await appendRunLog(ctx.db, run.id, `attempt ${ctx.attempt} failed: ${errorMessage(err)}`, Date.now()).catch(() => {});
    }
    throw err;
  }
};

async function importFile(run: BatchImport, ctx: JobContext): Promise<BatchImportOutcome> {
  let done = run.recordsDone;
  const total = run.recordsTotal;
  await say(ctx, run, done > 0 ? `resuming at record ${done} of ${total} (attempt ${run.attempts})` : `started: ${total} records (attempt ${run.attempts})`);
  await ctx.progress({ percent: percentDone(done, total), records_done: done, records_total: total });

  let position = 0;
  let chunks = 0;
  const commit = async (chunk: ReadyChunk): Promise<'interrupted' | 'superseded' | undefined> => {
    if (ctx.signal.aborted) return 'interrupted';
    const result = await commitChunk(ctx.db, ctx.events, run, chunk, Date.now());
    if (!result.committed) return 'superseded';
    done = chunk.from + chunk.units;
    chunks += 1;
    await ctx.progress({ percent: percentDone(done, total), records_done: done, records_total: total });
    if (chunks % LOG_EVERY_CHUNKS === 0) {
      const now = await findBatchImport(ctx.db, run.id);
      await ctx.logLine(`${done}/${total} records: ${now?.imported ?? '?'} imported, ${now?.deduplicated ?? '?'} duplicates, ${now?.rejected ?? '?'} rejected`);
    }
    return undefined;
  };
  const pipeline = new ChunkPipeline(done, await chunkPreparer(run, ctx), commit);

  // Fixed before reading: `done` grows while later chunks are still being read.
  const resumeAt = done;
  try {
    for await (const batch of readUnits(run.filePath, run.format)) {
      const count = batch.kind === 'csv' ? batch.rows.length : batch.units.length;
      for (let i = 0; i < count; i++, position++) {
        if (position < resumeAt) continue; // committed by an earlier attempt
        if (batch.kind === 'csv') pipeline.addCsv(batch.header, batch.rows[i]!);
        else pipeline.addJson(batch.units[i]!);
        if (pipeline.full) {
          const step = await pipeline.cut();
          if (step) return stop(step, run, ctx, done);
        }
      }
    }
  } catch (err) {
    // A file that turns out bad mid-way fails the run only after the chunk committing has landed.
    await pipeline.settle();
    throw err;
  }
  const step = await pipeline.finish();
  if (step) return stop(step, run, ctx, done);
  if (ctx.signal.aborted) return stop('interrupted', run, ctx, done);
  // The counts are final: only the holder of the checkpoint can still change them, and that is us.
  const final = await findBatchImport(ctx.db, run.id);
  const line = `succeeded: ${final?.imported} imported, ${final?.deduplicated} duplicates, ${final?.rejected} rejected`;
  if (!(await setBatchImportStatus(ctx.db, run.id, 'succeeded', { now: Date.now(), expectDone: done, line }))) return stop('superseded', run, ctx, done);
  fs.rmSync(run.filePath, { force: true });
  await ctx.progress({ percent: 100, records_done: done, records_total: total });
  ctx.log.info({ importId: run.id }, line);
  await ctx.logLine(line);
  return 'succeeded';
}

async function stop(step: 'interrupted' | 'superseded', run: BatchImport, ctx: JobContext, done: number): Promise<BatchImportOutcome> {
  if (step === 'superseded') {
    // Another worker moved the checkpoint (this job was re-enqueued while we still ran).
    throw new RetryableError(`batch import ${run.id} was advanced by another worker; this attempt stops`);
  }
  const why = ctx.signal.reason instanceof Error ? ctx.signal.reason.message : 'stopped';
  const line = `interrupted at record ${done} of ${run.recordsTotal} (${why}); will resume`;
  await setBatchImportStatus(ctx.db, run.id, 'queued', { now: Date.now(), expectDone: done, line });
  ctx.log.info({ importId: run.id }, line);
  await ctx.logLine(line);
  return 'interrupted';
}

/**
 * The warehouse-sync handler: one run of one import. Reads the source in a deterministic order,
 * in batches of WAREHOUSE_BATCH_SIZE rows; each batch commits with the run's counts and
 * checkpoint (src/warehouse/sync-batch.ts), so a crash, a deploy or a Redis loss loses nothing
 * committed. The next attempt re-reads from the first row (restartRead: a position in a table
 * that may have changed names no fixed row) and — with every write path deduplicating and a
 * mirror's snapshot finding written rows the same — converges to the table as it is then,
 * counting nothing twice. The time_based watermark moves only in the transaction that marks the
 * run SUCCEEDED.
 *
 * Failure edges: a PermanentError (bad mapping, missing table or column, bad credentials) or the
 * last attempt marks the run FAILED; anything else puts it back to QUEUED with the error logged
 * and lets BullMQ retry. Shutdown (ctx.signal): the current batch commits, the run goes back to
 * QUEUED, and the worker runtime hands the job back.
 */
import { WarehouseDeadlineExceeded } from '../connectors/deadline.js';
import type { WarehouseConnector } from '../connectors/warehouse.js';
import { findProjectById } from '../src/db/accounts.repo.js';
import { finishRun, findRun, startAttempt, ACTIVE_STATUSES, ZERO_COUNTS, type SyncCheckpoint, type SyncRun } from '../src/db/sync-runs.repo.js';
import { findImport, findSource, setWatermark, type WarehouseImport, type WarehouseSource } from '../src/db/warehouse.repo.js';
import { appendLog, logLine } from '../src/domain/sync-log.js';
import { schemaProblems } from '../src/domain/warehouse-import.js';
import { errorMessage, PermanentError, RetryableError } from '../src/lib/errors.js';
import { endsRun, interruptionCause, isFinalAttempt } from '../src/runs/failure.js';
import { workerId } from '../src/runs/partitions.js';
import { syncLookupTable } from '../src/warehouse/lookup-sync.js';
import { readSpecFor, tableLabel } from '../src/warehouse/read-spec.js';
import { connectorFor } from '../src/warehouse/sources.service.js';
import { runRecorder } from '../src/warehouse/sync-batch.js';
import { nextWatermark, outcomeLine, SyncState } from '../src/warehouse/sync-state.js';
import { sweepVanished } from '../src/warehouse/mirror-batch.js';
import type { JobContext } from './types.js';
import { enqueuePartitionFlow, planPartitions } from './warehouse-sync.partition.js';
import { mirrorContext, readAndCommit, restartRead, Superseded } from './warehouse-sync.read.js';
import { readChangesAndCommit } from './warehouse-sync.changes.js';

export type SyncOutcome = 'succeeded' | 'interrupted' | 'already-finished' | 'cancelled' | 'missing' | 'partitioned';

/** Progress lines in the log: at every 10% (or every this many rows when the total is unknown). */
const LOG_EVERY_ROWS = 100_000;

interface Loaded {
  run: SyncRun;
  imp: WarehouseImport;
  source: WarehouseSource;
}

export async function runWarehouseSync(runId: string, ctx: JobContext): Promise<SyncOutcome> {
  const run = await findRun(ctx.db, runId);
  if (!run) {
    ctx.log.warn({ runId }, 'warehouse sync: run not found (its import was deleted)');
    return 'missing';
  }
  if (!ACTIVE_STATUSES.includes(run.status)) return 'already-finished';
  const now = Date.now();
  const imp = await findImport(ctx.db, run.importId);
  const source = imp ? await findSource(ctx.db, imp.sourceId) : undefined;
  if (!imp || !source) {
    await finishRun(ctx.db, runId, 'CANCELLED', { error: 'import deleted', log: appendLog(run.log, [logLine(now, 'cancelled: the import was deleted')]), now });
    return 'cancelled';
  }

  let startLine = '';
  const started = await startAttempt(ctx.db, runId, run.attempts, { now, worker: workerId() }, (current, attempt) => {
    const checkpoint: SyncCheckpoint = { ...current.checkpoint };
    // The watermark a time_based run reads after is fixed at its first start, so every attempt reads the same rows.
    if (!('after' in checkpoint)) checkpoint.after = imp.definition.sync_mode === 'time_based' ? imp.watermark : null;
    startLine =
      checkpoint.offset > 0
        ? imp.definition.sync_mode === 'mirror' && checkpoint.readDone
          ? `attempt ${attempt} (job ${ctx.jobId}): the whole table was read; deleting what it no longer holds`
          : `attempt ${attempt} (job ${ctx.jobId}): re-reading from the first row (a position in a table that may have changed since attempt ${attempt - 1} names no fixed row)`
        : `attempt ${attempt} (job ${ctx.jobId}): started, reading ${source.type} ${tableLabel(imp.definition)}` +
          (checkpoint.after !== null && checkpoint.after !== undefined ? ` where ${imp.definition.insert_time_column_name} >= ${JSON.stringify(checkpoint.after)}` : '');
    return { checkpoint, log: appendLog(current.log, [logLine(now, startLine)]) };
  });
  if (!started) return 'already-finished';
  const { attempt } = started;
  await ctx.logLine(startLine);
  const state = new SyncState(started.run, started.checkpoint, started.log);

  try {
    return await sync({ run: started.run, imp, source }, attempt, state, ctx);
  } catch (err) {
    if (err instanceof Superseded) throw new RetryableError(`run ${runId} was taken over by a newer attempt or cancelled`);
    const message = errorMessage(err);
    const aborted = ctx.signal.aborted && !(err instanceof PermanentError);
    const permanent = !aborted && (await endsRun(err, isFinalAttempt('warehouse-sync', ctx.attempt), ctx));
    const line = aborted
      ? `interrupted after row ${state.offset} (${interruptionCause(ctx.signal)}); will resume`
      : permanent
        ? `failed: ${message}`
        : `attempt ${attempt} failed: ${message}; will retry`;
    state.say(line);
    await ctx.logLine(line);
    ctx.log[permanent ? 'error' : 'warn']({ runId, err: message }, 'warehouse sync attempt ended');
    await finishRun(ctx.db, runId, permanent ? 'FAILED' : 'QUEUED', { error: aborted ? null : message, log: state.log, now: Date.now() }, attempt).catch(
      (e: unknown) => ctx.log.error({ err: errorMessage(e), runId }, 'could not record the run outcome'),
    );
    if (permanent) throw new PermanentError(message, { cause: err });
    throw err;
  }
}

async function sync({ run, imp, source }: Loaded, attempt: number, state: SyncState, ctx: JobContext): Promise<SyncOutcome> {
  if (state.checkpoint.partitions) {
    // Planned by an earlier attempt: the partitions carry the run now; re-enqueue what Redis lost.
    await enqueuePartitionFlow(run, imp, ctx);
    return 'partitioned';
  }
  const project = await findProjectById(ctx.db, imp.projectId);
  if (project && project.idMerge !== 'simplified') {
    throw new PermanentError(`project ${imp.projectId} is not on the simplified ID merge system; warehouse imports need it`);
  }
  const def = imp.definition;
  let connector: WarehouseConnector | undefined;
  try {
    connector = connectorFor(ctx, source);
    const columns = await connector.describe(def.table_params);
    const problems = schemaProblems(def, columns);
    if (problems.length > 0) throw new PermanentError(`the source no longer matches the import: ${problems.join('; ')}`);
    const spec = readSpecFor(def, columns, state.checkpoint.after);
    const cctx = { log: ctx.log, signal: ctx.signal };
    const tracked = def.sync_mode === 'mirror' && 'table' in def.table_params && connector.changePoint !== undefined && connector.streamChanges !== undefined;
    if (tracked) {
      // Taken before anything is read: changes made while this run reads are read again by the next.
      state.checkpoint.changePoint ??= await connector.changePoint!(cctx);
      if (typeof imp.watermark === 'number' && !state.checkpoint.fullRead) {
        const line = `reading the changes since ${new Date(imp.watermark).toISOString()} (the warehouse's change tracking)`;
        state.say(line);
        await ctx.logLine(line);
        const read = { run, imp, source, connector, spec, state, record: runRecorder(run.id, attempt), afterCommit: () => ctx.progress({ percent: 0, rows_read: state.counts.rowsRead }) };
        const out = await readChangesAndCommit(read, imp.watermark, attempt, ctx);
        if (out === 'interrupted') return interrupted(run.id, attempt, state, ctx);
        if (out === 'done') return succeed(run, imp, attempt, state, ctx);
        state.checkpoint = { ...state.checkpoint, fullRead: true, offset: 0 };
      }
    }
    if (state.rowsTotal === null && connector.count) {
      state.rowsTotal = await connector.count(spec, cctx).catch((err: unknown) => {
        // A count past the read deadline means the read itself would be too: fail now, not after a second deadline.
        if (err instanceof WarehouseDeadlineExceeded) throw err;
        ctx.log.warn({ err: errorMessage(err) }, 'warehouse sync: row count failed; progress shows rows read only');
        return null;
      });
      if (state.rowsTotal !== null) await ctx.logLine(`${state.rowsTotal} rows to read`);
    }

    if (def.import_type === 'lookup_table') {
      const res = await syncLookupTable(
        {
          db: ctx.db,
          connector,
          spec,
          keyColumn: def.property_key_column_name!,
          lookupTableId: def.lookup_table_id!,
          maxBytes: ctx.config.WAREHOUSE_LOOKUP_MAX_BYTES,
          signal: ctx.signal,
          log: ctx.log,
        },
        state,
      );
      if (res === 'interrupted') return interrupted(run.id, attempt, state, ctx);
      state.counts = { ...ZERO_COUNTS, rowsRead: res.rowsRead, rowsSkipped: res.rowsSkipped, numImported: res.rowsLoaded };
      state.checkpoint = { ...state.checkpoint, offset: res.rowsRead };
      for (const l of res.lines) state.say(l);
      return succeed(run, imp, attempt, state, ctx);
    }

    if (await planPartitions({ run, imp, attempt, state, connector, spec }, ctx)) return 'partitioned';

    let nextLogAt = nextMilestone(state);
    const afterCommit = async () => {
      await ctx.progress({ percent: state.percent(), rows_read: state.counts.rowsRead, rows_total: state.rowsTotal });
      if (state.counts.rowsRead >= nextLogAt) {
        await ctx.logLine(progressLine(state));
        nextLogAt = nextMilestone(state);
      }
    };
    const read = { run, imp, source, connector, spec, state, record: runRecorder(run.id, attempt), afterCommit };
    const mirror = def.sync_mode === 'mirror';
    // A mirror that read the whole table only has the sweep left; anything else read is read again.
    if (!(mirror && state.checkpoint.readDone)) {
      if (state.offset > 0 && !(await restartRead(read, ctx))) throw new Superseded();
      if ((await readAndCommit(read, ctx)) === 'interrupted') return interrupted(run.id, attempt, state, ctx);
    }
    if (mirror) {
      // Committed with the sweep's first chunk (or the success): a later attempt only sweeps.
      state.checkpoint = { ...state.checkpoint, readDone: true };
      const swept = await sweepVanished(mirrorContext(read, ctx), def.import_type as 'events' | 'people' | 'groups', def.group_key, state, ctx.signal);
      if (swept === false) throw new Superseded();
      if (swept === 'interrupted') return interrupted(run.id, attempt, state, ctx);
    }
    return succeed(run, imp, attempt, state, ctx);
  } finally {
    await connector?.close().catch(() => {});
  }
}

function nextMilestone(state: SyncState): number {
  if (state.rowsTotal) {
    const step = Math.max(1, Math.ceil(state.rowsTotal / 10));
    return (Math.floor(state.counts.rowsRead / step) + 1) * step;
  }
  return (Math.floor(state.counts.rowsRead / LOG_EVERY_ROWS) + 1) * LOG_EVERY_ROWS;
}

function progressLine(state: SyncState): string {
  const c = state.counts;
  const of = state.rowsTotal !== null ? ` of ${state.rowsTotal} (${state.percent()}%)` : '';
  return `${c.rowsRead} rows read${of}: ${c.numImported} imported, ${c.numDeduplicated} duplicates, ${c.rowsSkipped} rejected`;
}

async function interrupted(runId: string, attempt: number, state: SyncState, ctx: JobContext): Promise<SyncOutcome> {
  const line = state.say(`interrupted after row ${state.offset} (${interruptionCause(ctx.signal)}); will resume`);
  await ctx.logLine(line);
  await finishRun(ctx.db, runId, 'QUEUED', { log: state.log, now: Date.now() }, attempt);
  return 'interrupted';
}

/** Marks the run SUCCEEDED and, for time_based, moves the watermark — in one transaction. */
async function succeed(run: SyncRun, imp: WarehouseImport, attempt: number, state: SyncState, ctx: JobContext): Promise<SyncOutcome> {
  const c = state.counts;
  const line = state.say(outcomeLine(c, imp.definition.sync_mode === 'mirror'));
  const max = nextWatermark(imp, state.checkpoint);
  const moveWatermark = max !== undefined;
  const done = await ctx.db.transaction(async (trx) => {
    const ok = await finishRun(trx, run.id, 'SUCCEEDED', { checkpoint: state.checkpoint, ...c, rowsTotal: state.rowsTotal, log: state.log, error: null, now: Date.now() }, attempt);
    if (ok && moveWatermark) await setWatermark(trx, imp.id, max!);
    return ok;
  });
  if (!done) throw new Superseded();
  await ctx.progress({ percent: 100, rows_read: c.rowsRead, rows_total: state.rowsTotal });
  await ctx.logLine(line);
  if (moveWatermark) await ctx.logLine(`watermark of import ${imp.id} is now ${JSON.stringify(max)}`);
  ctx.log.info({ runId: run.id, importId: imp.id, ...c }, 'warehouse sync succeeded');
  return 'succeeded';
}

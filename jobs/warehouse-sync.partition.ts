/**
 * Partitioned sync runs (a run over SYNC_PARTITION_ROWS rows is split into partitions): what a sync supplies to the run machinery —
 * how to plan partitions (split points of the read's first order column, pushed down to the
 * source), how to read one (the same ordered read, limited to its range; a resumed partition
 * re-reads its range from its first row, as a resumed run re-reads the table — a mirror
 * partition marks what it reads with its own tag and forgets those marks first) and how to commit one (the partition row and the run's counts in
 * the batch's transaction). The run succeeds — and the watermark moves — in the transaction that
 * marks its last partition done, under the run row's lock, so exactly one partition finishes it.
 * A partition that fails for good fails the run with its error; the others stop at their next
 * batch; the watermark stays; a re-run converges (every write path deduplicates).
 */
import type { KeyRange, ReadSpec, WarehouseConnector } from '../connectors/warehouse.js';
import { findProjectById } from '../src/db/accounts.repo.js';
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
import { addRunCounts, countsDelta, finishRun, findRun, lockRun, recordProgress, setRunLog, ZERO_COUNTS, type Counts, type SyncCheckpoint, type SyncRun } from '../src/db/sync-runs.repo.js';
import { findImport, findSource, setWatermark, type WarehouseImport } from '../src/db/warehouse.repo.js';
import { appendLog, logLine } from '../src/domain/sync-log.js';
import { partitionSeenTag } from '../src/domain/mirror-diff.js';
import { compareWatermarks } from '../src/domain/warehouse-values.js';
import { errorMessage, PermanentError, RetryableError } from '../src/lib/errors.js';
import { warehouseSyncFinishJobId, warehouseSyncPartJobId } from '../src/queue/job-ids.js';
import { endsRun, interruptionCause, isFinalAttempt } from '../src/runs/failure.js';
import { flowProgress, partitionLabel, rangesFromPoints, workerId } from '../src/runs/partitions.js';
import { readSpecFor } from '../src/warehouse/read-spec.js';
import { connectorFor } from '../src/warehouse/sources.service.js';
import type { BatchRecorder } from '../src/warehouse/sync-batch.js';
import { nextWatermark, outcomeLine, SyncState } from '../src/warehouse/sync-state.js';
import { sweepVanished } from '../src/warehouse/mirror-batch.js';
import type { JobContext } from './types.js';
import { readAndCommit, restartRead, Superseded } from './warehouse-sync.read.js';

type PartCheckpoint = Pick<SyncCheckpoint, 'offset' | 'maxInsertTime' | 'samples' | 'discount'>;

const KIND = 'sync' as const;

/** "project 3 (Acme) · import 7": whose jobs these are, on the dashboard. */
async function owner(ctx: JobContext, imp: WarehouseImport): Promise<string> {
  const project = await findProjectById(ctx.db, imp.projectId).catch(() => undefined);
  return `project ${imp.projectId}${project ? ` (${project.name})` : ''} · import ${imp.id}`;
}

async function sayOnRun(db: DbOrTrx, runId: string, lines: string[], now = Date.now()): Promise<void> {
  const run = await lockRun(db, runId);
  if (run) await setRunLog(db, runId, appendLog(run.log, lines.map((l) => logLine(now, l))), now);
}

/**
 * Plans a partitioned run when it is over SYNC_PARTITION_ROWS and the connector can split:
 * writes the partitions and the run's checkpoint in one transaction, then enqueues the flow.
 * Returns false (read it whole) when the source cannot be split into more than one range.
 */
export async function planPartitions(
  a: { run: SyncRun; imp: WarehouseImport; attempt: number; state: SyncState; connector: WarehouseConnector; spec: ReadSpec },
  ctx: JobContext,
): Promise<boolean> {
  const limit = ctx.config.SYNC_PARTITION_ROWS;
  const column = a.spec.orderBy?.[0];
  if (!column || !a.connector.splitPoints || a.state.rowsTotal === null || a.state.rowsTotal <= limit || a.state.offset > 0) return false;
  const points = await a.connector.splitPoints(a.spec, column, limit, { log: ctx.log, signal: ctx.signal });
  const ranges = rangesFromPoints(column, points);
  if (ranges.length < 2) return false;
  const line = a.state.say(`split into ${ranges.length} partitions of about ${limit} rows by ${column} (SYNC_PARTITION_ROWS)`);
  const checkpoint: SyncCheckpoint = { ...a.state.checkpoint, partitions: ranges.length };
  const now = Date.now();
  const ours = await ctx.db.transaction(async (trx) => {
    const ok = await recordProgress(trx, a.run.id, a.attempt, { checkpoint, ...ZERO_COUNTS, rowsTotal: a.state.rowsTotal, log: a.state.log, now });
    if (ok) await insertPartitions(trx, KIND, a.run.id, ranges, { offset: 0 }, now);
    return ok;
  });
  if (!ours) throw new Superseded();
  a.state.checkpoint = checkpoint;
  await ctx.logLine(line);
  await enqueuePartitionFlow(a.run, a.imp, ctx);
  return true;
}

/**
 * The run's flow: the finish job as parent, one child per partition not yet done. Idempotent
 * (deterministic ids), so a retried planner re-enqueues what Redis lost and nothing else.
 */
export async function enqueuePartitionFlow(run: SyncRun, imp: WarehouseImport, ctx: JobContext): Promise<number> {
  const parts = await listPartitions<KeyRange, PartCheckpoint>(ctx.db, KIND, run.id);
  const who = await owner(ctx, imp);
  const pending = parts.filter((p) => p.status !== 'done' && p.status !== 'failed');
  await ctx.queues.enqueueFlow(
    { name: 'warehouse-sync-finish', payload: { runId: run.id }, options: { jobId: warehouseSyncFinishJobId(run.id), label: `${who} · run ${run.id} (${parts.length} partitions)` } },
    pending.map((p) => ({
      name: 'warehouse-sync-part' as const,
      payload: { runId: run.id, part: p.idx },
      options: { jobId: warehouseSyncPartJobId(run.id, p.idx), label: `${who} · ${partitionLabel(p.idx, p.total)}` },
    })),
  );
  return pending.length;
}

export type PartitionOutcome = 'done' | 'run-succeeded' | 'interrupted' | 'run-finished' | 'not-taken' | 'stopped';

/** The `warehouse-sync-part` job: read and commit one partition; the last one done finishes the run. */
export async function runSyncPartition({ runId, part }: { runId: string; part: number }, ctx: JobContext): Promise<PartitionOutcome> {
  const run = await findRun(ctx.db, runId);
  if (!run || run.status !== 'RUNNING') return 'run-finished';
  const imp = await findImport(ctx.db, run.importId);
  const source = imp ? await findSource(ctx.db, imp.sourceId) : undefined;
  if (!imp || !source) return 'run-finished'; // the import was deleted: its run is cancelled
  const key: PartitionKey = { kind: KIND, runId, idx: part };
  const p = await startPartition<KeyRange, PartCheckpoint>(ctx.db, key, workerId(), Date.now());
  if (!p) return 'not-taken';
  const label = partitionLabel(p.idx, p.total);
  const attempt = p.attempts;
  const counts = { ...ZERO_COUNTS, ...p.counts } as Counts;
  // About SYNC_PARTITION_ROWS rows: the estimate decides whether a reader thread pays off.
  const state = new SyncState({ ...counts, rowsTotal: ctx.config.SYNC_PARTITION_ROWS }, { ...p.checkpoint }, []);
  const startLine =
    `${label} (job ${ctx.jobId}, attempt ${attempt}, worker ${p.worker}): ` +
    (state.offset > 0 ? `re-reading its range from the first row (a position in a table that may have changed since attempt ${attempt - 1} names no fixed row)` : 'started');
  await sayOnRun(ctx.db, runId, [startLine]);
  await ctx.logLine(startLine);

  let connector: WarehouseConnector | undefined;
  try {
    connector = connectorFor(ctx, source);
    const columns = await connector.describe(imp.definition.table_params);
    const spec: ReadSpec = { ...readSpecFor(imp.definition, columns, run.checkpoint.after), range: p.range };
    const afterCommit = async () => {
      await ctx.progress({ percent: state.percent(), rows_read: state.counts.rowsRead, partition: p.idx + 1, partitions: p.total });
      if (ctx.parentProgress) await ctx.parentProgress(await runProgress(ctx, runId));
    };
    const seenAs = imp.definition.sync_mode === 'mirror' ? partitionSeenTag(runId, p.idx) : undefined;
    const read = { run, imp, source, connector, spec, state, record: partitionRecorder(key, attempt, label), afterCommit, seenAs };
    if (state.offset > 0 && !(await restartRead(read, ctx))) throw new Superseded();
    const out = await readAndCommit(read, ctx);
    if (out === 'interrupted') {
      await finishPartition(ctx.db, key, attempt, 'queued', { now: Date.now() });
      await sayOnRun(ctx.db, runId, [`${label} interrupted after row ${state.offset} (${interruptionCause(ctx.signal)}); will resume`]);
      return 'interrupted';
    }
    const outcome = await completePartition(ctx, key, attempt, imp, label, state);
    await ctx.progress({ percent: 100, rows_read: state.counts.rowsRead, partition: p.idx + 1, partitions: p.total });
    if (ctx.parentProgress) await ctx.parentProgress(await runProgress(ctx, runId));
    return outcome;
  } catch (err) {
    if (err instanceof Superseded) {
      const now = await findRun(ctx.db, runId);
      if (!now || now.status !== 'RUNNING') return 'stopped'; // failed by another partition, or cancelled
      throw new RetryableError(`${label} of run ${runId} was taken over by a newer attempt`);
    }
    const message = errorMessage(err);
    if (ctx.signal.aborted && !(err instanceof PermanentError)) {
      await finishPartition(ctx.db, key, attempt, 'queued', { now: Date.now() }).catch(() => {});
      throw err;
    }
    const permanent = await endsRun(err, isFinalAttempt('warehouse-sync-part', ctx.attempt), ctx);
    const now = Date.now();
    await ctx.db
      .transaction(async (trx) => {
        if (!permanent) {
          await finishPartition(trx, key, attempt, 'queued', { error: message, now });
          await sayOnRun(trx, runId, [`${label} attempt ${attempt} failed: ${message}; will retry`], now);
          return;
        }
        if (!(await finishPartition(trx, key, attempt, 'failed', { error: message, now }))) return;
        const locked = await lockRun(trx, runId);
        if (!locked) return;
        const error = `${label}: ${message}`;
        await finishRun(trx, runId, 'FAILED', { error, log: appendLog(locked.log, [logLine(now, `failed: ${error}`)]), now });
      })
      .catch((e: unknown) => ctx.log.error({ err: errorMessage(e), runId, part }, 'could not record the partition outcome'));
    await ctx.logLine(permanent ? `failed: ${message}` : `attempt failed: ${message}; will retry`);
    if (permanent) throw new PermanentError(`${label}: ${message}`, { cause: err });
    throw err;
  } finally {
    await connector?.close().catch(() => {});
  }
}

/** Commits with the partition's row (fenced on its lease) and adds the batch to the run's counts. */
function partitionRecorder(key: PartitionKey, attempt: number, label: string): BatchRecorder {
  return async (trx, staged, state, now) => {
    if (!(await recordPartition(trx, key, attempt, { checkpoint: staged.checkpoint, counts: { ...staged.counts }, now }))) return false;
    if (!(await addRunCounts(trx, key.runId, countsDelta(staged.counts, state.counts), now))) return false;
    if (staged.lines.length > 0) await sayOnRun(trx, key.runId, staged.lines.map((l) => `${label}: ${l}`), now);
    return [];
  };
}

/** Marks the partition done; the one that sees every partition done finishes the run, in the same transaction. */
async function completePartition(ctx: JobContext, key: PartitionKey, attempt: number, imp: WarehouseImport, label: string, state: SyncState): Promise<PartitionOutcome> {
  const mirror = imp.definition.sync_mode === 'mirror';
  let result = await ctx.db.transaction(async (trx) => {
    if (!(await finishPartition(trx, key, attempt, 'done', { error: null, now: Date.now() }))) throw new Superseded();
    await sayOnRun(trx, key.runId, [`${label} done: ${outcomeLine(state.counts, mirror, { partition: true }).replace(/^succeeded: /, '')}`]);
    // A mirror deletes what no partition saw before it can succeed: sweepAndFinish, below.
    return mirror ? { succeeded: false, line: '' } : finishIfComplete(trx, key.runId, imp);
  });
  if (mirror) result = await sweepAndFinish(ctx, key.runId, imp);
  if (result.succeeded) {
    await ctx.logLine(result.line);
    ctx.log.info({ runId: key.runId, importId: imp.id }, 'partitioned warehouse sync succeeded');
    return 'run-succeeded';
  }
  return 'done';
}

/**
 * Under the run row's lock: when every partition is done and the run still RUNNING, mark it
 * SUCCEEDED and (time_based) move the watermark to the greatest insert time any partition read.
 */
async function finishIfComplete(trx: DbOrTrx, runId: string, imp: WarehouseImport): Promise<{ succeeded: boolean; line: string }> {
  const run = await lockRun(trx, runId);
  if (!run || run.status !== 'RUNNING' || !(await allPartitionsDone(trx, KIND, runId))) return { succeeded: false, line: '' };
  const parts = await listPartitions<KeyRange, PartCheckpoint>(trx, KIND, runId);
  let max: string | number | undefined;
  for (const p of parts) {
    const m = p.checkpoint.maxInsertTime;
    if (m !== undefined && (max === undefined || compareWatermarks(m, max) > 0)) max = m;
  }
  const now = Date.now();
  const line = outcomeLine(run, imp.definition.sync_mode === 'mirror', { partitions: parts.length });
  const watermark = nextWatermark(imp, { maxInsertTime: max, changePoint: run.checkpoint.changePoint });
  const lines = [logLine(now, line), ...(watermark !== undefined ? [logLine(now, `watermark of import ${imp.id} is now ${JSON.stringify(watermark)}`)] : [])];
  const ok = await finishRun(trx, runId, 'SUCCEEDED', { log: appendLog(run.log, lines), error: null, now });
  if (ok && watermark !== undefined) await setWatermark(trx, imp.id, watermark);
  return { succeeded: ok, line };
}

/**
 * A mirror run whose partitions are all done: delete what no partition saw, then finish. Any
 * number of callers may sweep at once (the last partitions, the flow's parent): each deleted key
 * is counted by the one that removed it from the snapshot, and one of them finishes the run.
 */
async function sweepAndFinish(ctx: JobContext, runId: string, imp: WarehouseImport): Promise<{ succeeded: boolean; line: string }> {
  const run = await findRun(ctx.db, runId);
  if (!run || run.status !== 'RUNNING' || !(await allPartitionsDone(ctx.db, KIND, runId))) return { succeeded: false, line: '' };
  const state = new SyncState({ ...ZERO_COUNTS, rowsTotal: null }, { offset: 0 }, []);
  const record: BatchRecorder = async (trx, staged, s, now) => ((await addRunCounts(trx, runId, countsDelta(staged.counts, s.counts), now)) ? [] : false);
  const mc = { db: ctx.db, events: ctx.events, record, projectId: imp.projectId, importId: imp.id, runId };
  const swept = await sweepVanished(mc, imp.definition.import_type as 'events' | 'people' | 'groups', imp.definition.group_key, state, ctx.signal);
  if (swept !== 'done') return { succeeded: false, line: '' }; // interrupted (the flow's parent resumes it) or no longer running
  return ctx.db.transaction((trx) => finishIfComplete(trx, runId, imp));
}

/** The `warehouse-sync-finish` job (the flow's parent): a safety net — the last partition normally finished the run already. */
export async function finishPartitionedRun({ runId }: { runId: string }, ctx: JobContext): Promise<string> {
  const run = await findRun(ctx.db, runId);
  if (!run) return 'missing';
  if (run.status === 'RUNNING') {
    const imp = await findImport(ctx.db, run.importId);
    if (imp?.definition.sync_mode === 'mirror') await sweepAndFinish(ctx, runId, imp);
    else if (imp) await ctx.db.transaction((trx) => finishIfComplete(trx, runId, imp));
  }
  await ctx.progress(await runProgress(ctx, runId));
  return (await findRun(ctx.db, runId))?.status ?? 'missing';
}

async function runProgress(ctx: JobContext, runId: string) {
  const run = await findRun(ctx.db, runId);
  const s = (await partitionSummaries(ctx.db, KIND, [runId])).get(runId) ?? { total: 0, done: 0 };
  return { ...flowProgress(s.done, s.total, run?.rowsRead ?? 0, run?.rowsTotal ?? null), status: run?.status };
}

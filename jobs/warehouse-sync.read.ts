/**
 * Read one range of a sync and commit it batch by batch — what an unpartitioned run and each
 * partition of a large run do alike; they differ only in the recorder (run row, or partition
 * row plus the run's counts) the batches commit with.
 */
import { WarehouseReadAborted, type ReadSpec, type Row, type WarehouseConnector } from '../connectors/warehouse.js';
import { unmarkMirrorRows } from '../src/db/mirror-rows.repo.js';
import type { SyncRun } from '../src/db/sync-runs.repo.js';
import type { WarehouseImport, WarehouseSource } from '../src/db/warehouse.repo.js';
import type { ImportDefinition } from '../src/domain/warehouse-import.js';
import { compileEventMapper, compileProfileMapper, type EventMapping } from '../src/domain/warehouse-mapping.js';
import { prepareEventRows, readEventBatches, type EventReadPlan } from '../src/warehouse/event-reader.js';
import { readEventBatchesInThread } from '../src/warehouse/event-reader-thread.js';
import { rowBatches } from '../src/warehouse/row-batches.js';
import { tableLabel } from '../src/warehouse/read-spec.js';
import { openSourceConfig } from '../src/warehouse/sources.service.js';
import { commitMirrorEventRows, commitMirrorProfileBatch, type MirrorContext, type MirrorProfileWriter } from '../src/warehouse/mirror-batch.js';
import { commitBatch, commitEventBatch, commitStaged, type BatchRecorder, type BatchWriter } from '../src/warehouse/sync-batch.js';
import type { SyncState } from '../src/warehouse/sync-state.js';
import type { JobContext } from './types.js';

/** The run (or partition) is no longer this attempt's: cancelled, failed elsewhere or taken over. */
export class Superseded extends Error {}

export interface RangeRead {
  run: SyncRun;
  imp: WarehouseImport;
  source: WarehouseSource;
  connector: WarehouseConnector;
  /** The rows to read, from the first (a resumed attempt re-reads: restartRead). */
  spec: ReadSpec;
  state: SyncState;
  record: BatchRecorder;
  /** After each committed batch (progress, log lines). */
  afterCommit: () => Promise<void>;
  /** Mirror: what this read marks its rows seen as (a partition's tag; the run id by default). */
  seenAs?: string;
}

/**
 * A resumed attempt (`state.offset` > 0: an earlier one committed rows) re-reads from the first
 * row rather than after a position — rows deleted from the table since would shift a position
 * past rows never read. In one transaction with the read's record: the counts start again
 * (StagedBatch.restart) and a mirror forgets what this read marked seen, so the re-read marks
 * exactly what the table holds now. False when the run is no longer ours.
 */
export async function restartRead(r: RangeRead, ctx: JobContext): Promise<boolean> {
  const def = r.imp.definition;
  const mirror = def.sync_mode === 'mirror' ? mirrorContext(r, ctx) : undefined;
  const staged = r.state.stage();
  staged.restart(mirror ? 'mirror' : def.import_type === 'events' ? 'events' : 'profiles');
  return commitStaged({ db: ctx.db, record: r.record }, r.state, staged, async (trx) => {
    if (mirror) await unmarkMirrorRows(trx, mirror.importId, mirror.seenAs ?? mirror.runId);
  });
}

/** Reads and commits `spec` to the end ('done') or until the signal aborts ('interrupted'). */
export async function readAndCommit(r: RangeRead, ctx: JobContext): Promise<'done' | 'interrupted'> {
  const def = r.imp.definition;
  const batchSize = ctx.config.WAREHOUSE_BATCH_SIZE;
  const cctx = { log: ctx.log, signal: ctx.signal };
  const mirror = def.sync_mode === 'mirror' ? mirrorContext(r, ctx) : undefined;

  if (def.import_type === 'events' && !mirror) {
    const plan = eventReadPlan(r, batchSize);
    const batches = useReaderThread(ctx, r.state)
      ? readEventBatchesInThread({ type: r.source.type, config: openSourceConfig(ctx.secrets, r.source), settings: ctx.config, plan }, ctx.signal)
      : readEventBatches(r.connector, plan, cctx);
    try {
      for await (const batch of batches) {
        if (!(await commitEventBatch({ db: ctx.db, events: ctx.events, record: r.record, projectId: r.imp.projectId }, r.state, batch))) throw new Superseded();
        await r.afterCommit();
        if (ctx.signal.aborted) return 'interrupted';
      }
    } catch (err) {
      if (err instanceof WarehouseReadAborted) return 'interrupted';
      throw err;
    }
    return 'done';
  }

  // Batches of source rows: people and groups, and mirror events (classified before they are mapped).
  const commitRows = mirror ? mirrorCommitter(def, mirror, r, batchSize) : profileCommitter(def, r, ctx);
  let batch: Row[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    if (!(await commitRows(rows))) throw new Superseded();
    await r.afterCommit();
  };
  try {
    for await (const rows of rowBatches(r.connector, r.spec, batchSize, cctx)) {
      batch = rows;
      await flush();
      if (ctx.signal.aborted) return 'interrupted';
    }
  } catch (err) {
    if (!(err instanceof WarehouseReadAborted)) throw err;
    await flush(); // keep what was read before the abort
    return 'interrupted';
  }
  return 'done';
}

/** How a mirror commits a batch of source rows (events or profiles); shared by full reads and change reads. */
export function mirrorCommitter(def: ImportDefinition, mc: MirrorContext, r: Pick<RangeRead, 'run' | 'imp' | 'source' | 'spec' | 'state'>, batchSize: number): (rows: Row[]) => Promise<boolean> {
  if (def.import_type !== 'events') {
    const writer = mirrorProfileWriter(def);
    return (rows) => commitMirrorProfileBatch(mc, r.state, writer, rows);
  }
  const plan = eventReadPlan(r, batchSize);
  const map = compileEventMapper(plan.mapping);
  return (rows) => commitMirrorEventRows(mc, r.state, def.insert_id_column_name!, rows, (subset, numbers) => prepareEventRows(subset, numbers, plan, map));
}

function profileCommitter(def: ImportDefinition, r: RangeRead, ctx: JobContext): (rows: Row[]) => Promise<boolean> {
  const insertTimeColumn = def.sync_mode === 'time_based' ? def.insert_time_column_name : undefined;
  const bc = { db: ctx.db, events: ctx.events, record: r.record, projectId: r.imp.projectId, writer: profileWriter(def), insertTimeColumn };
  return (rows) => commitBatch(bc, r.state, rows);
}

/** What a mirror run's batches and sweep commit with: the import's snapshot, fenced like every batch by `record`. */
export function mirrorContext(r: Pick<RangeRead, 'run' | 'imp' | 'record' | 'seenAs'>, ctx: JobContext): MirrorContext {
  return { db: ctx.db, events: ctx.events, record: r.record, projectId: r.imp.projectId, importId: r.imp.id, runId: r.run.id, seenAs: r.seenAs };
}

export function mirrorProfileWriter(def: ImportDefinition): MirrorProfileWriter {
  const writer = profileWriter(def);
  const id = writer.kind === 'people' ? def.user_column_name! : def.group_id_column!;
  return { kind: writer.kind, map: writer.map, mapped: new Set([id, def.time_column_name!, ...def.json_properties_column_name]) };
}

/** How an events read maps, validates and stamps its rows (the same for a full read and a change read). */
export function eventReadPlan(r: Pick<RangeRead, 'run' | 'imp' | 'source' | 'spec'>, batchSize: number): EventReadPlan {
  const def = r.imp.definition;
  return {
    spec: r.spec,
    mapping: eventMapping(def),
    stamp: eventStamp(r.run, r.imp, r.source),
    batchSize,
    insertTimeColumn: def.sync_mode === 'time_based' ? def.insert_time_column_name : undefined,
  };
}

function eventMapping(def: ImportDefinition): EventMapping {
  return {
    eventName: def.event_name,
    eventColumn: def.event_column_name,
    timeColumn: def.time_column_name!,
    insertIdColumn: def.insert_id_column_name,
    userColumn: def.user_column_name,
    distinctIdColumn: def.distinct_id_column_name,
    deviceColumn: def.device_column_name,
    jsonColumns: def.json_properties_column_name,
  };
}

/** The properties stamped on every event a sync loads ($warehouse_import_id, …, $import, $source). */
function eventStamp(run: SyncRun, imp: WarehouseImport, source: WarehouseSource): Record<string, unknown> {
  return {
    $warehouse_import_id: String(imp.id),
    $warehouse_import_job_id: run.jobId,
    $warehouse_import_run_id: run.id,
    $import: true,
    $source: 'warehouse-import',
    $warehouse_type: source.type,
    $warehouse_table: tableLabel(imp.definition),
  };
}

function profileWriter(def: ImportDefinition): BatchWriter {
  const kind = def.import_type as 'people' | 'groups';
  return {
    kind,
    map: compileProfileMapper({
      idColumn: kind === 'people' ? def.user_column_name! : def.group_id_column!,
      groupKey: kind === 'groups' ? def.group_key : undefined,
      timeColumn: def.time_column_name!,
      jsonColumns: def.json_properties_column_name,
    }),
  };
}

/** A reader thread pays off once the read is big enough to amortise starting it. */
const READER_THREAD_MIN_ROWS = 20_000;

function useReaderThread(ctx: JobContext, state: SyncState): boolean {
  const mode = ctx.config.WAREHOUSE_READER_THREAD;
  if (mode !== 'auto') return mode === 'on';
  return state.rowsTotal === null || state.rowsTotal >= READER_THREAD_MIN_ROWS;
}

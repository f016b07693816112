/**
 * Warehouse imports: Mixpanel's field names in and out, validated by zod and then against the
 * source's real schema (missing table, unknown columns, a nullable time column with full_sync).
 */
import { dropSyncPartitions, partitionSummaries, type PartitionSummary } from '../db/run-partitions.repo.js';
import { runWorkersOf } from '../db/run-workers.repo.js';
import { z } from 'zod';
import { findProjectById } from '../db/accounts.repo.js';
import { dropMirrorRows } from '../db/mirror-rows.repo.js';
import type { Db } from '../db/knex.js';
import type { EventStore } from '../store/event-store.js';
import { cancelActiveRuns, hasSucceededRun, listRuns, lockImportTriggers, manualRunTimesSince, type SyncRun } from '../db/sync-runs.repo.js';
import {
  deleteImport,
  findImport,
  insertImport,
  keepSource,
  listImports,
  lookupTableInProject,
  updateImport,
  type WarehouseImport,
} from '../db/warehouse.repo.js';
import { scheduleCron } from '../domain/sync-schedule.js';
import {
  definitionProblems,
  importInputSchema,
  schemaProblems,
  toDefinition,
  zodProblems,
} from '../domain/warehouse-import.js';
import { NotFoundError, ValidationError } from '../lib/errors.js';
import { bad, getSource, withSourceConnector, type SourceDeps } from './sources.service.js';
import { triggerRun, type TriggerCheck, type TriggerDeps } from './runs.service.js';
import { isoTime, isoTimeOrNull } from '../domain/iso-time.js';

export function publicImport(imp: WarehouseImport): Record<string, unknown> {
  const { json_properties_column_name: json, ...def } = imp.definition;
  const out: Record<string, unknown> = { id: imp.id, ...def, paused: imp.paused };
  if (json.length > 0) out.json_properties_column_name = json.length === 1 ? json[0] : json;
  if (def.sync_mode === 'time_based') out.watermark = imp.watermark;
  out.created = isoTime(imp.createdAt);
  out.updated = isoTime(imp.updatedAt);
  return out;
}

/** Only projects on simplified ID merge take warehouse imports. */
export async function requireSimplifiedIdMerge(db: Db, projectId: number): Promise<void> {
  const project = await findProjectById(db, projectId);
  if (project && project.idMerge !== 'simplified') {
    throw bad([
      `project ${projectId} uses the ${project.idMerge} ID merge system; warehouse imports need a project on the simplified ID merge system`,
    ]);
  }
}

export async function createImport(deps: SourceDeps, projectId: number, body: unknown): Promise<Record<string, unknown>> {
  const parsed = importInputSchema.safeParse(body);
  if (!parsed.success) throw bad(zodProblems(parsed.error));
  const input = parsed.data;
  const problems = definitionProblems(input);
  if (problems.length > 0) throw bad(problems);
  await requireSimplifiedIdMerge(deps.db, projectId);
  const source = await findSourceFor(deps.db, projectId, input.warehouse_source_id);
  if (input.lookup_table_id !== undefined && !(await lookupTableInProject(deps.db, input.lookup_table_id, projectId))) {
    throw bad([`lookup_table_id: lookup table ${input.lookup_table_id} does not exist in project ${projectId}`]);
  }
  const definition = toDefinition(input);
  const columns = await withSourceConnector(deps, source, 'table_params', (c) => c.describe(definition.table_params));
  const schema = schemaProblems(definition, columns);
  if (schema.length > 0) throw bad(schema);
  // Checked again where the import is inserted, the source kept until the commit: it may have been
  // deleted while its table was described (a DELETE waits for the commit, then takes the import too).
  const imp = await deps.db.transaction(async (trx) => {
    if (!(await keepSource(trx, source.id, projectId))) throw noSource(projectId, source.id);
    return insertImport(trx, { projectId, sourceId: source.id, definition, paused: input.paused ?? false, now: Date.now() });
  });
  return publicImport(imp);
}

const noSource = (projectId: number, sourceId: number) => bad([`warehouse_source_id: warehouse source ${sourceId} does not exist in project ${projectId}`]);

async function findSourceFor(db: Db, projectId: number, sourceId: number) {
  try {
    return await getSource(db, projectId, sourceId);
  } catch {
    throw noSource(projectId, sourceId);
  }
}

export async function getImport(db: Db, projectId: number, id: number): Promise<WarehouseImport> {
  const imp = await findImport(db, id, projectId);
  if (!imp) throw new NotFoundError(`warehouse import ${id} not found in project ${projectId}`);
  return imp;
}

export async function listProjectImports(db: Db, projectId: number): Promise<Record<string, unknown>[]> {
  return (await listImports(db, projectId)).map(publicImport);
}

const patchSchema = z
  .object({
    paused: z.boolean({ error: 'paused must be true or false' }).optional(),
    schedule: z.string({ error: 'schedule must be a string' }).max(120).optional(),
  })
  .strict();

export async function patchImport(db: Db, projectId: number, id: number, body: unknown): Promise<Record<string, unknown>> {
  const parsed = patchSchema.safeParse(body);
  if (!parsed.success) {
    const modeChange = body !== null && typeof body === 'object' && Object.prototype.hasOwnProperty.call(body, 'sync_mode');
    const hint = modeChange ? 'only paused and schedule can be changed; a sync mode is fixed when the import is created (create a new import to change it)' : 'only paused and schedule can be changed';
    throw bad(zodProblems(parsed.error).map((p) => (p.startsWith('unknown field') ? `${p}: ${hint}` : p)));
  }
  const imp = await getImport(db, projectId, id);
  const definition = { ...imp.definition };
  if (parsed.data.schedule !== undefined) {
    const s = scheduleCron(parsed.data.schedule);
    if (!s.ok) throw bad([s.message]);
    if (definition.sync_mode === 'one_time' && s.cron !== null) throw bad(['one_time imports run once when triggered: schedule must be api_only']);
    definition.schedule = parsed.data.schedule.trim();
  }
  await updateImport(db, id, { paused: parsed.data.paused, definition, now: Date.now() });
  return publicImport(await getImport(db, projectId, id));
}

/**
 * Deletes the import and its run history; an active run is cancelled and stops at its next batch.
 * With `deleteData` (the `delete_data` parameter), also every event the import loaded.
 * Holds the import's trigger lock (lockImportTriggers), so a manual or scheduled trigger either
 * commits its run first (deleted with the import) or finds the import gone (404).
 */
export async function removeImport(db: Db, projectId: number, id: number, deleteData?: EventStore): Promise<{ eventsDeleted?: number }> {
  await getImport(db, projectId, id);
  // delete_data: the events go first, so a failure leaves the import to delete again; once more
  // after, for a batch an active run committed before it saw its cancellation.
  const scope = { importId: String(id) };
  let eventsDeleted = deleteData ? await deleteData.deleteImportEvents(projectId, scope) : undefined;
  await db.transaction(async (trx) => {
    await lockImportTriggers(trx, id);
    if (!(await findImport(trx, id, projectId))) throw new NotFoundError(`warehouse import ${id} not found in project ${projectId}`);
    await cancelActiveRuns(trx, id, 'import deleted', Date.now());
    await dropMirrorRows(trx, id);
    await dropSyncPartitions(trx, { importId: id });
    await deleteImport(trx, id);
  });
  if (deleteData) eventsDeleted = eventsDeleted! + (await deleteData.deleteImportEvents(projectId, scope));
  return { eventsDeleted };
}

const HOUR_MS = 3600_000;

/**
 * A manual sync. A sync already queued or running is returned (and does not count); new ones
 * are limited to `perHour` per import in any rolling hour (0 = no limit): beyond, 429 with
 * Retry-After. Counted in SQL, so every web process sees the same limit. The one_time and
 * per-hour rules are checked in the transaction that inserts the run, under the import's trigger
 * lock and after the insert was tried (see triggerRun): concurrent triggers, and a run finishing
 * meanwhile, can neither run a one_time import twice nor exceed the limit.
 */
export async function manualSync(deps: TriggerDeps, projectId: number, id: number, perHour = 0, now = Date.now()): Promise<SyncRun> {
  const imp = await getImport(deps.db, projectId, id);
  await requireSimplifiedIdMerge(deps.db, projectId);
  const check: TriggerCheck = async (trx, { created, run }) => {
    if (imp.definition.sync_mode === 'one_time' && (await hasSucceededRun(trx, imp.id))) {
      throw bad([`import ${imp.id} is one_time and has already completed; create a new import to load the table again`]);
    }
    if (!created || perHour <= 0) return;
    const recent = await manualRunTimesSince(trx, imp.id, now - HOUR_MS, run.id);
    if (recent.length >= perHour) {
      const freeAt = recent[recent.length - perHour]! + HOUR_MS;
      const seconds = Math.max(1, Math.ceil((freeAt - now) / 1000));
      throw new ValidationError(429, `import ${imp.id} already had ${recent.length} manual syncs in the last hour (the limit is ${perHour}); try again in ${seconds} s`, {
        headers: { 'Retry-After': String(seconds) },
      });
    }
  };
  return (await triggerRun(deps, imp, 'manual', undefined, check)).run;
}

/**
 * A run as history shows it. `partitions`: {total, done} of a partitioned run (an unpartitioned
 * run is one partition); `workers`: the "host:pid" of every worker that ran a part of it.
 */
export function publicRun(run: SyncRun, parts: PartitionSummary | undefined, workers: string[]): Record<string, unknown> {
  const percent =
    run.status === 'SUCCEEDED' ? 100 : run.rowsTotal ? Math.min(99, Math.floor((run.rowsRead / Math.max(1, run.rowsTotal)) * 100)) : 0;
  return {
    run_id: run.id,
    job_id: run.jobId,
    trigger: run.trigger,
    status: run.status,
    queued_time: isoTimeOrNull(run.createdAt),
    start_time: isoTimeOrNull(run.startedAt),
    end_time: isoTimeOrNull(run.finishedAt),
    num_events_imported: run.numImported,
    num_events_updated: run.numUpdated,
    num_events_deleted: run.numDeleted,
    num_deduplicated: run.numDeduplicated,
    rows_read: run.rowsRead,
    rows_skipped: run.rowsSkipped,
    rows_total: run.rowsTotal,
    progress_percent: percent,
    attempts: run.attempts,
    schedule_slot: isoTimeOrNull(run.slot),
    error: run.error,
    partitions: parts ? { total: parts.total, done: parts.done } : { total: 1, done: run.status === 'SUCCEEDED' ? 1 : 0 },
    workers,
    log: run.log,
  };
}

export async function importHistory(db: Db, projectId: number, id: number, limit: number): Promise<Record<string, unknown>[]> {
  await getImport(db, projectId, id);
  const runs = await listRuns(db, id, limit);
  const ids = runs.map((r) => r.id);
  const [parts, workers] = await Promise.all([partitionSummaries(db, 'sync', ids), runWorkersOf(db, 'sync', ids)]);
  return runs.map((r) => publicRun(r, parts.get(r.id), workers.get(r.id) ?? []));
}

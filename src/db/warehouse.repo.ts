/**
 * Warehouse sources and imports. A source's connection config is stored sealed (AES-GCM under
 * SECRETS_KEY) and only the sync handler and the connection test ever open it.
 */
import type { ImportDefinition } from '../domain/warehouse-import.js';
import { keptOnPostgres, parseJson, toJson, toNumber, type DbOrTrx } from './knex.js';

export interface WarehouseSource {
  id: number;
  projectId: number;
  type: string;
  name: string;
  configSealed: string;
  createdAt: number;
}

export interface WarehouseImport {
  id: number;
  projectId: number;
  sourceId: number;
  definition: ImportDefinition;
  paused: boolean;
  /** time_based: greatest insert-time value of the last committed run. */
  watermark: string | number | null;
  createdAt: number;
  updatedAt: number;
}

function toSource(r: Record<string, unknown>): WarehouseSource {
  return {
    id: toNumber(r.id),
    projectId: toNumber(r.project_id),
    type: r.type as string,
    name: r.name as string,
    configSealed: r.config_sealed as string,
    createdAt: toNumber(r.created_at),
  };
}

function toImport(r: Record<string, unknown>): WarehouseImport {
  return {
    id: toNumber(r.id),
    projectId: toNumber(r.project_id),
    sourceId: toNumber(r.source_id),
    definition: parseJson<ImportDefinition>(r.definition),
    paused: Boolean(r.paused),
    watermark: r.watermark === null || r.watermark === undefined ? null : (JSON.parse(r.watermark as string) as string | number),
    createdAt: toNumber(r.created_at),
    updatedAt: toNumber(r.updated_at),
  };
}

export async function insertSource(
  db: DbOrTrx,
  s: { projectId: number; type: string; name: string; configSealed: string; now: number },
): Promise<WarehouseSource> {
  const [row] = await db('warehouse_sources')
    .insert({ project_id: s.projectId, type: s.type, name: s.name, config_sealed: s.configSealed, created_at: s.now })
    .returning('*');
  return toSource(row);
}

export async function listSources(db: DbOrTrx, projectId: number): Promise<WarehouseSource[]> {
  return (await db('warehouse_sources').where({ project_id: projectId }).orderBy('id')).map(toSource);
}

/** A source by id, within a project when `projectId` is given. */
export async function findSource(db: DbOrTrx, id: number, projectId?: number): Promise<WarehouseSource | undefined> {
  const q = db('warehouse_sources').where({ id });
  if (projectId !== undefined) q.andWhere({ project_id: projectId });
  const row = await q.first();
  return row ? toSource(row) : undefined;
}

/**
 * A source of the project, kept from being deleted until the transaction ends (see
 * keptOnPostgres): what a new import is checked against in the transaction that inserts it.
 */
export async function keepSource(db: DbOrTrx, id: number, projectId: number): Promise<WarehouseSource | undefined> {
  const row = await keptOnPostgres(db, db('warehouse_sources').where({ id, project_id: projectId })).first();
  return row ? toSource(row) : undefined;
}

export async function deleteSource(db: DbOrTrx, id: number): Promise<void> {
  await db('warehouse_sources').where({ id }).delete();
}

export async function insertImport(
  db: DbOrTrx,
  i: { projectId: number; sourceId: number; definition: ImportDefinition; paused: boolean; now: number },
): Promise<WarehouseImport> {
  const [row] = await db('warehouse_imports')
    .insert({
      project_id: i.projectId,
      source_id: i.sourceId,
      import_type: i.definition.import_type,
      sync_mode: i.definition.sync_mode,
      schedule: i.definition.schedule,
      paused: i.paused,
      definition: toJson(i.definition),
      watermark: null,
      created_at: i.now,
      updated_at: i.now,
    })
    .returning('*');
  return toImport(row);
}

export async function listImports(db: DbOrTrx, projectId: number): Promise<WarehouseImport[]> {
  return (await db('warehouse_imports').where({ project_id: projectId }).orderBy('id')).map(toImport);
}

export async function findImport(db: DbOrTrx, id: number, projectId?: number): Promise<WarehouseImport | undefined> {
  const q = db('warehouse_imports').where({ id });
  if (projectId !== undefined) q.andWhere({ project_id: projectId });
  const row = await q.first();
  return row ? toImport(row) : undefined;
}

/**
 * An import, kept from being deleted until the transaction ends (see keptOnPostgres): a run is
 * inserted only for an import that still exists, whatever deletes it (the import's DELETE, or its
 * source's, which cascades).
 */
export async function keepImport(db: DbOrTrx, id: number): Promise<WarehouseImport | undefined> {
  const row = await keptOnPostgres(db, db('warehouse_imports').where({ id })).first();
  return row ? toImport(row) : undefined;
}

export async function updateImport(
  db: DbOrTrx,
  id: number,
  patch: { paused?: boolean; definition?: ImportDefinition; now: number },
): Promise<void> {
  const row: Record<string, unknown> = { updated_at: patch.now };
  if (patch.paused !== undefined) row.paused = patch.paused;
  if (patch.definition) {
    row.definition = toJson(patch.definition);
    row.schedule = patch.definition.schedule;
  }
  await db('warehouse_imports').where({ id }).update(row);
}

export async function deleteImport(db: DbOrTrx, id: number): Promise<void> {
  await db('warehouse_imports').where({ id }).delete();
}

/** Sets the time_based watermark (called in the transaction that commits a run). */
export async function setWatermark(db: DbOrTrx, id: number, watermark: string | number): Promise<void> {
  await db('warehouse_imports').where({ id }).update({ watermark: JSON.stringify(watermark) });
}

/** Imports the scheduler should consider: not paused and not api_only. */
export async function listScheduledImports(db: DbOrTrx): Promise<{ id: number; schedule: string; updatedAt: number }[]> {
  const rows = await db('warehouse_imports').where({ paused: false }).whereNot({ schedule: 'api_only' }).select('id', 'schedule', 'updated_at');
  return rows.map((r) => ({ id: toNumber(r.id), schedule: r.schedule as string, updatedAt: toNumber(r.updated_at) }));
}

/** Whether a lookup table (owned by the lookup-tables area) exists in the project. */
export async function lookupTableInProject(db: DbOrTrx, lookupTableId: number, projectId: number): Promise<boolean> {
  return (await db('lookup_tables').where({ id: lookupTableId, project_id: projectId }).first('id')) !== undefined;
}

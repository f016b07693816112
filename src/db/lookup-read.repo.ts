/** Read side of lookup tables: which tables are mapped to an event property, and their rows. */
import { parseJson, toNumber, type DbOrTrx } from './knex.js';

export interface MappedLookupTable {
  id: number;
  name: string;
  /** The event property whose value is this table's key. */
  mappedProperty: string;
}

export async function mappedLookupTables(db: DbOrTrx, projectId: number): Promise<MappedLookupTable[]> {
  const rows = await db('lookup_tables')
    .select('id', 'name', 'mapped_property')
    .where('project_id', projectId)
    .whereNotNull('mapped_property')
    .andWhere('mapped_property', '<>', '')
    .orderBy('id');
  return rows.map((r) => ({ id: toNumber(r.id), name: r.name as string, mappedProperty: r.mapped_property as string }));
}

const KEY_CHUNK = 500;

/** The rows of one table with the given keys, by key. */
export async function lookupRowsByKeys(
  db: DbOrTrx,
  tableId: number,
  keys: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < keys.length; i += KEY_CHUNK) {
    const rows = await db('lookup_rows')
      .select('key', 'properties')
      .where('lookup_table_id', tableId)
      .whereIn('key', keys.slice(i, i + KEY_CHUNK));
    for (const r of rows) out.set(r.key as string, parseJson(r.properties) ?? {});
  }
  return out;
}

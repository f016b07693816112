/**
 * The `ev` table (fillEventsTable) as a mirror run follows it: the import that mirrors it, the
 * changes the warehouse makes between two runs, and how what the project holds afterwards differs
 * from the table.
 */
import type { EventStore } from '../../src/store/event-store.js';
import { eventsByInsertId } from './events.js';
import { EV_EVENTS_IMPORT, type WarehouseSourceHandle } from './warehouse-sources.js';

/** Mirrors `ev`: its id column is the insert id, so a changed row updates its event and a missing one deletes it. */
export const EV_MIRROR_IMPORT = { ...EV_EVENTS_IMPORT, sync_mode: 'mirror', insert_id_column_name: 'id' } as const;

/** Where changeEvTable changes the table: the first id of the 1000 rows updated, and of the rows deleted (1000 unless `deletedRows`). */
export interface EvChanges {
  updated: number;
  deleted: number;
  deletedRows?: number;
}

/** In the warehouse: 1000 rows changed from id `updated`, `deletedRows` (1000) deleted from id `deleted`, 500 added after the `rows` there were. */
export async function changeEvTable(src: WarehouseSourceHandle, rows: number, at: EvChanges): Promise<void> {
  await src.exec(`UPDATE ev SET url = 'changed' WHERE id BETWEEN ${at.updated} AND ${at.updated + 999}`);
  await src.exec(`DELETE FROM ev WHERE id BETWEEN ${at.deleted} AND ${at.deleted + (at.deletedRows ?? 1000) - 1}`);
  await src.exec(`INSERT INTO ev SELECT id + ${rows}, event, ts, user_id, url FROM ev WHERE id < 500`);
}

/** The project's events as insert id → url; a second copy of an insert id throws. */
export function storedUrlsById(store: EventStore, projectId: number): Promise<Map<string, unknown>> {
  return eventsByInsertId(store, projectId, (e) => e.properties.url);
}

/** The `ev` table of `rows` rows after changeEvTable(…, rows, at), as id → url (computed the way fillEventsTable and changeEvTable write it). */
export function evTableAfterChanges(rows: number, at: EvChanges): Map<string, string> {
  const within = (id: number, from: number, n = 1000) => id >= from && id < from + n;
  const table = new Map<string, string>();
  for (let id = 0; id < rows; id++) {
    if (!within(id, at.deleted, at.deletedRows)) table.set(String(id), within(id, at.updated) ? 'changed' : `/p/${id % 97}`);
  }
  for (let id = 0; id < 500; id++) {
    const url = table.get(String(id));
    if (url !== undefined) table.set(String(rows + id), url);
  }
  return table;
}

export interface TableDifferences {
  /** Table rows the project has no event for (a lost batch). */
  missing: number;
  /** Events of ids the table does not hold (a delete not applied). */
  extra: number;
  /** Events whose url is not the row's (a change not applied). */
  wrong: number;
  /** The first few ids of each kind, to say what went wrong. */
  examples: string[];
}

export const NO_DIFFERENCES: TableDifferences = { missing: 0, extra: 0, wrong: 0, examples: [] };

/**
 * How the project differs from the `ev` table after changeEvTable(src, rows, at): NO_DIFFERENCES
 * when it holds every row once, changed where the row changed, and nothing else. A doubled event
 * throws (storedUrlsById).
 */
export async function differencesFromEvTable(store: EventStore, projectId: number, rows: number, at: EvChanges): Promise<TableDifferences> {
  const table = evTableAfterChanges(rows, at);
  const stored = await storedUrlsById(store, projectId);
  const d: TableDifferences = { missing: 0, extra: 0, wrong: 0, examples: [] };
  const note = (kind: 'missing' | 'extra' | 'wrong', id: string) => {
    d[kind] += 1;
    if (d.examples.length < 10) d.examples.push(`${kind} ${id}`);
  };
  for (const [id, url] of table) {
    if (!stored.has(id)) note('missing', id);
    else if (stored.get(id) !== url) note('wrong', id);
  }
  for (const id of stored.keys()) if (!table.has(id)) note('extra', id);
  return d;
}

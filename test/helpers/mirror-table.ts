/**
 * The `ev` table (fillEventsTable) as a mirror run follows it: the import that mirrors it, the
 * changes the warehouse makes between two runs, and what the project holds afterwards.
 */
import type { EventStore } from '../../src/store/event-store.js';
import { EV_EVENTS_IMPORT, type WarehouseSourceHandle } from './warehouse-sources.js';

/** Mirrors `ev`: its id column is the insert id, so a changed row updates its event and a missing one deletes it. */
export const EV_MIRROR_IMPORT = { ...EV_EVENTS_IMPORT, sync_mode: 'mirror', insert_id_column_name: 'id' } as const;

/** In the warehouse: 1000 rows changed from id `updated`, 1000 deleted from id `deleted`, 500 added after the `rows` there were. */
export async function changeEvTable(src: WarehouseSourceHandle, rows: number, at: { updated: number; deleted: number }): Promise<void> {
  await src.exec(`UPDATE ev SET url = 'changed' WHERE id BETWEEN ${at.updated} AND ${at.updated + 999}`);
  await src.exec(`DELETE FROM ev WHERE id BETWEEN ${at.deleted} AND ${at.deleted + 999}`);
  await src.exec(`INSERT INTO ev SELECT id + ${rows}, event, ts, user_id, url FROM ev WHERE id < 500`);
}

/** The project's events as insert id → url; a second copy of an insert id throws. */
export async function storedUrlsById(store: EventStore, projectId: number): Promise<Map<string, unknown>> {
  const seen = new Map<string, unknown>();
  for await (const page of store.scan({ projectId, fromMs: 0, toMs: Date.UTC(2030, 0, 1), pageSize: 10_000 })) {
    for (const e of page) {
      if (seen.has(e.insertId)) throw new Error(`insert id ${e.insertId} is stored twice`);
      seen.set(e.insertId, e.properties.url);
    }
  }
  return seen;
}

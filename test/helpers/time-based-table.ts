/**
 * The `ev` table as a time_based import follows it, for the fault tests: rows carry an
 * insert-time column (when the row reached the warehouse) apart from their event time, the
 * warehouse appends rows between and during runs, and afterwards the project must hold every row
 * the table has, once.
 */
import type { EventStore } from '../../src/store/event-store.js';
import { eventsByInsertId } from './events.js';
import { EV_EVENTS_IMPORT, type WarehouseSourceHandle } from './warehouse-sources.js';
import { call, type Api } from './warehouse.js';

/** When row 0 reached the warehouse (ms); row i arrived `i` ms later, so insert times strictly increase. */
export const INSERTED_AT_0 = Date.UTC(2024, 5, 1);

export const insertTimeOf = (id: number): number => INSERTED_AT_0 + id;

/** Follows `ev` by its insert time; the id column is the insert id, so every row is its own event. */
export const EV_TIME_BASED_IMPORT = { ...EV_EVENTS_IMPORT, sync_mode: 'time_based', insert_time_column_name: 'inserted_at', insert_id_column_name: 'id' } as const;

/** The empty `ev` table: fillEventsTable's columns plus `inserted_at`. */
export async function createTimeBasedTable(src: WarehouseSourceHandle): Promise<void> {
  await src.createTable({
    name: 'ev',
    columns: [
      { name: 'id', type: 'integer', notNull: true },
      { name: 'event', type: 'text', notNull: true },
      { name: 'ts', type: 'integer', notNull: true },
      { name: 'user_id', type: 'text' },
      { name: 'url', type: 'text' },
      { name: 'inserted_at', type: 'integer', notNull: true },
    ],
  });
}

/**
 * The warehouse receives rows `from` … `from + count - 1`, made inside the source by one
 * statement. Their event times are scattered over eleven days, unrelated to their insert order
 * (late-arriving events): a read that followed the event time instead of the insert time would
 * skip some of them.
 */
export async function appendEvRows(src: WarehouseSourceHandle, from: number, count: number): Promise<void> {
  const columns = (i: string) =>
    `${i}, 'event_' || (${i} % 7), 1704067200000 + ((${i} * 7919) % 1000003) * 1000, 'user-' || (${i} % 5000), '/p/' || (${i} % 97), ${INSERTED_AT_0} + ${i}`;
  const last = from + count - 1;
  // The cloud stand-ins keep their tables in SQLite too (`exec` runs SQLite SQL on that file).
  if (src.type === 'sqlite' || src.type === 'bigquery' || src.type === 'databricks') {
    await src.exec(`WITH RECURSIVE c(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM c WHERE i < ${last}) INSERT INTO ev SELECT ${columns('i')} FROM c`);
  } else if (src.type === 'postgres' || src.type === 'redshift') {
    await src.exec(`INSERT INTO ${src.tableRef('ev')} SELECT ${columns('i')} FROM generate_series(${from}::bigint, ${last}::bigint) AS i`);
  } else throw new Error(`appendEvRows: no bulk insert for ${src.type}`);
}

/**
 * Which of the ids 0 … rows - 1 the project does not hold, and how many events it holds in all;
 * a second event of one insert id throws (eventsByInsertId).
 */
export async function storedEvRows(store: EventStore, projectId: number, rows: number): Promise<{ stored: number; missing: number[] }> {
  const seen = await eventsByInsertId(store, projectId, () => true);
  const missing: number[] = [];
  for (let id = 0; id < rows; id++) if (!seen.has(String(id))) missing.push(id);
  return { stored: seen.size, missing };
}

/** The import's watermark as the API shows it (the greatest insert time of its last successful run). */
export async function watermarkOf(api: Api, importId: number): Promise<unknown> {
  const res = await call(api, 'GET', `/imports/${importId}`);
  if (res.status !== 200) throw new Error(`get import: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.results.watermark;
}

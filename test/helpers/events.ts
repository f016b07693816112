/**
 * The event store the tests use over a test database, and the small read helpers tests use to
 * look at stored events. Every test that writes or reads events goes through `eventStoreOf(db)`,
 * so a store kind added to createEventStore (e.g. ClickHouse) is picked up here in one place.
 */
import type { Db } from '../../src/db/knex.js';
import { createEventStore } from '../../src/store/create-event-store.js';
import type { EventStore, StoredEvent } from '../../src/store/event-store.js';

const stores = new WeakMap<Db, EventStore>();

/**
 * Makes `store` the event store of this test database (a ClickHouse store beside the SQLite
 * metadata database: test/helpers/store-kinds.ts), for eventStoreOf and startTestApp.
 */
export function attachEventStore(db: Db, store: EventStore): void {
  stores.set(db, store);
}

/** The store over this test database (one per database handle). */
export function eventStoreOf(db: Db): EventStore {
  let s = stores.get(db);
  if (!s) {
    s = createEventStore({ EVENT_STORE_URL: undefined }, db);
    stores.set(db, s);
  }
  return s;
}

export function countEvents(db: Db, projectId: number): Promise<number> {
  return eventStoreOf(db).count(projectId);
}

export interface EventPageQuery {
  projectId: number;
  fromMs: number;
  toMs: number;
  events?: string[];
  limit: number;
}

export type EventAsStored = Omit<StoredEvent, 'resolvedId'>;

/** The first `limit` events of the range in time order, as stored (without the resolved id). */
export async function pageEvents(db: Db, q: EventPageQuery): Promise<EventAsStored[]> {
  const pages = eventStoreOf(db).scan({ projectId: q.projectId, fromMs: q.fromMs, toMs: q.toMs, events: q.events, pageSize: q.limit });
  const first = await pages.next();
  await pages.return(undefined);
  return first.done ? [] : first.value.map(({ resolvedId: _r, ...e }) => e);
}

/**
 * Every stored event of the project (any time up to 2030) as insert id → `value(event)`; a second
 * copy of an insert id throws, naming it: the one check that a replayed batch was stored once.
 */
export async function eventsByInsertId<T>(store: EventStore, projectId: number, value: (e: StoredEvent) => T): Promise<Map<string, T>> {
  const seen = new Map<string, T>();
  for await (const page of store.scan({ projectId, fromMs: 0, toMs: Date.UTC(2030, 0, 1), pageSize: 10_000 })) {
    for (const e of page) {
      if (seen.has(e.insertId)) throw new Error(`insert id ${e.insertId} is stored twice`);
      seen.set(e.insertId, value(e));
    }
  }
  return seen;
}

export function usageForMonth(db: Db, projectId: number, month: string): Promise<Record<string, number>> {
  return eventStoreOf(db).usageForMonth(projectId, month);
}

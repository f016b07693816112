/**
 * The event stores the store contract suite (test/store/) runs against. Each kind opens an
 * isolated store per test file: SQLite always, PostgreSQL when TEST_DATABASE_URL is set (events
 * in the same fresh schema as the metadata, as in production without EVENT_STORE_URL), and
 * ClickHouse — one server and the two-shard cluster — when TEST_CLICKHOUSE_* are set (.ci/run
 * sets them): accounts and runs in a SQLite test database, as a deployment keeps them in
 * DATABASE_URL, events in a fresh ClickHouse database of their own.
 */
import type { Db } from '../../src/db/knex.js';
import { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { createEventStore } from '../../src/store/create-event-store.js';
import type { EventStore } from '../../src/store/event-store.js';
import { clickhouseKinds, createTestClickHouse, type ClickHouseKind } from './clickhouse.js';
import { createTestDb, dbKinds, type TestDb } from './db.js';
import { attachEventStore } from './events.js';

export interface TestStore {
  /** The kind's name, e.g. `sqlite`, `postgres`, `clickhouse`, `clickhouse-cluster`. */
  name: string;
  store: EventStore;
  /** The DATABASE_URL test database beside the store (accounts, runs; SQL kinds: the events too). */
  db: Db;
  destroy: () => Promise<void>;
}

export interface StoreKind {
  name: string;
  /** A fresh, migrated, isolated store (call once per test file). */
  open: () => Promise<TestStore>;
}

function sqlKind(kind: 'sqlite' | 'postgres'): StoreKind {
  return {
    name: kind,
    open: async () => {
      const t = await createTestDb(kind);
      const store = createEventStore({ EVENT_STORE_URL: undefined }, t.db);
      await store.migrate();
      return {
        name: kind,
        store,
        db: t.db,
        destroy: async () => {
          await store.close();
          await t.destroy();
        },
      };
    },
  };
}

/**
 * How the contract suite reads on each ClickHouse kind: every report cut into time slices
 * however small, and segment columns for some of the properties it segments by (string, list,
 * number, bool and missing values) while the others are read from the property arrays.
 */
const CONTRACT_HOT_PROPERTIES: Record<ClickHouseKind, string> = { clickhouse: 'os,tags,n,flag,nothing', 'clickhouse-cluster': 'os,nums' };

/** A SQLite metadata database whose event store (eventStoreOf, startTestApp) is ClickHouse. */
async function openClickHouse(kind: ClickHouseKind): Promise<{ t: TestDb; store: ClickHouseEventStore; destroy: () => Promise<void> }> {
  const t = await createTestDb('sqlite');
  const ch = await createTestClickHouse(kind, CONTRACT_HOT_PROPERTIES[kind]);
  const store = new ClickHouseEventStore(ch.config, { sliceMinRows: 0 });
  attachEventStore(t.db, store);
  return {
    t,
    store,
    destroy: async () => {
      await store.close();
      await t.destroy();
      await ch.destroy();
    },
  };
}

function clickhouseKind(kind: ClickHouseKind): StoreKind {
  return {
    name: kind,
    open: async () => {
      const o = await openClickHouse(kind);
      return { name: kind, store: o.store, db: o.t.db, destroy: o.destroy };
    },
  };
}

export function storeKinds(): StoreKind[] {
  return [...dbKinds().map(sqlKind), ...clickhouseKinds().map(clickhouseKind)];
}

/** The kinds' names, for suites written as `describe.each(storeKindNames())` over a TestDb. */
export function storeKindNames(): string[] {
  return storeKinds().map((k) => k.name);
}

/**
 * For suites written over `TestDb` (`t.db` everywhere): the test database of a store kind,
 * whose event store (eventStoreOf / startTestApp) is that kind's, and whose destroy also drops
 * the ClickHouse database.
 */
export async function createStoreTestDb(name: string): Promise<TestDb> {
  if (name === 'sqlite' || name === 'postgres') return createTestDb(name);
  if (name !== 'clickhouse' && name !== 'clickhouse-cluster') throw new Error(`unknown store kind ${name}`);
  const o = await openClickHouse(name);
  return { ...o.t, destroy: o.destroy };
}

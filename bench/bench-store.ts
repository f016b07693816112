/**
 * The store a bench measures into: a migrated SQLite file, or a fresh scratch schema in Postgres
 * (dropped on close), with one project. Also the bare insert statements every "floor" row uses,
 * so each module's floor writes the same rows the same way.
 */
import crypto from 'node:crypto';
import { createProject } from '../src/accounts/accounts.service.js';
import { createDb, type Db } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createEventStore } from '../src/store/create-event-store.js';
import type { EventStore } from '../src/store/event-store.js';

const stores = new WeakMap<Db, EventStore>();

/** The event store a bench writes and counts through (events in the bench database). */
export function benchEventStore(db: Db): EventStore {
  let s = stores.get(db);
  if (!s) stores.set(db, (s = createEventStore({ EVENT_STORE_URL: undefined }, db)));
  return s;
}

export function countEvents(db: Db, projectId: number): Promise<number> {
  return benchEventStore(db).count(projectId);
}

export interface BenchStore {
  db: Db;
  projectId: number;
  token: string;
  /** A DATABASE_URL another process can use to reach the same store (Postgres: with search_path). */
  url: string;
  close: () => Promise<void>;
}

export async function openBenchStore(kind: 'sqlite' | 'postgres', target: string, poolMax?: number): Promise<BenchStore> {
  if (kind === 'sqlite') {
    const db = createDb({ DATABASE_URL: target });
    await migrateLatest(db);
    const p = await createProject(db, { name: 'bench' });
    return { db, projectId: p.id, token: p.token, url: target, close: () => db.destroy() };
  }
  const schema = `bench_${crypto.randomBytes(5).toString('hex')}`;
  const admin = createDb({ DATABASE_URL: target }, { poolMax: 1 });
  await admin.raw(`CREATE SCHEMA ${schema}`);
  const db = createDb({ DATABASE_URL: target }, { schema, poolMax });
  await migrateLatest(db);
  const p = await createProject(db, { name: 'bench' });
  const u = new URL(target);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return {
    db,
    projectId: p.id,
    token: p.token,
    url: u.toString(),
    close: async () => {
      await db.destroy();
      await admin.raw(`DROP SCHEMA ${schema} CASCADE`);
      await admin.destroy();
    },
  };
}

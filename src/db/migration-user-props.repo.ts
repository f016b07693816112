/**
 * Staged user properties of a migration: per user, the properties of their latest event seen so
 * far. Each committed batch upserts its per-user winners; the row only moves forward (a later
 * event, or at equal times the larger canonical JSON), so replays and any day order converge on
 * the same row. Memory stays flat however many users the source has: the state lives in SQL.
 */
import type Database from 'better-sqlite3';
import { dialect, toNumber, type DbOrTrx } from './knex.js';

export interface StagedUser {
  distinctId: string;
  time: number;
  /** Canonical JSON of the properties. */
  properties: string;
}

const WINS =
  'WHERE excluded.time > migration_user_props.time OR ' +
  '(excluded.time = migration_user_props.time AND excluded.properties > migration_user_props.properties)';

const SQLITE_UPSERT =
  'INSERT INTO migration_user_props (migration_id, distinct_id, time, properties) VALUES (?, ?, ?, ?) ' +
  `ON CONFLICT (migration_id, distinct_id) DO UPDATE SET time = excluded.time, properties = excluded.properties ${WINS}`;

// COLLATE "C": byte order, the same order SQLite's BINARY comparison gives.
const PG_UPSERT =
  'INSERT INTO migration_user_props (migration_id, distinct_id, time, properties) ' +
  'SELECT ?, d, t, p FROM unnest(?::text[], ?::bigint[], ?::text[]) AS u(d, t, p) ' +
  'ON CONFLICT (migration_id, distinct_id) DO UPDATE SET time = excluded.time, properties = excluded.properties ' +
  'WHERE excluded.time > migration_user_props.time OR ' +
  '(excluded.time = migration_user_props.time AND excluded.properties COLLATE "C" > migration_user_props.properties COLLATE "C")';

const statements = new WeakMap<Database.Database, Database.Statement>();

/** Upserts one batch's winners (at most one row per user). */
export async function stageUsers(db: DbOrTrx, migrationId: string, users: readonly StagedUser[]): Promise<void> {
  if (users.length === 0) return;
  if (dialect(db) === 'postgres') {
    await db.raw(PG_UPSERT, [
      migrationId,
      users.map((u) => u.distinctId),
      users.map((u) => u.time),
      users.map((u) => u.properties),
    ]);
    return;
  }
  const conn = (await db.client.acquireConnection()) as Database.Database;
  try {
    let stmt = statements.get(conn);
    if (!stmt) {
      stmt = conn.prepare(SQLITE_UPSERT);
      statements.set(conn, stmt);
    }
    for (const u of users) stmt.run(migrationId, u.distinctId, u.time, u.properties);
  } finally {
    if (!('isTransaction' in db && db.isTransaction)) await db.client.releaseConnection(conn);
  }
}

/** The next page of staged users after `after`, in distinct_id order. */
export async function pageStagedUsers(db: DbOrTrx, migrationId: string, after: string | null, limit: number): Promise<StagedUser[]> {
  let q = db('migration_user_props').where({ migration_id: migrationId }).orderBy('distinct_id').limit(limit);
  if (after !== null) q = q.andWhere('distinct_id', '>', after);
  const rows = await q.select('distinct_id', 'time', 'properties');
  return rows.map((r) => ({ distinctId: r.distinct_id as string, time: toNumber(r.time), properties: r.properties as string }));
}

export async function countStagedUsers(db: DbOrTrx, migrationId: string): Promise<number> {
  const row = await db('migration_user_props').where({ migration_id: migrationId }).count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}

export async function dropStagedUsers(db: DbOrTrx, migrationId: string): Promise<void> {
  await db('migration_user_props').where({ migration_id: migrationId }).delete();
}

/**
 * Event storage. Dedupe is the unique key (project_id, event, distinct_id, time, insert_id) with
 * ON CONFLICT DO NOTHING, so a replay of any batch is a no-op. SQLite takes the rows through one
 * cached prepared statement on the raw connection (the knex query builder costs more than the
 * insert itself); Postgres takes a whole batch as one unnest() statement.
 */
import type Database from 'better-sqlite3';
import type { NormalizedEvent } from '../domain/event-record.js';
import { dialect, parseJson, toNumber, type DbOrTrx } from './knex.js';

export interface StoredEvent {
  id: number;
  event: string;
  distinctId: string;
  time: number;
  insertId: string;
  properties: Record<string, unknown>;
}

const SQLITE_INSERT =
  'INSERT INTO events (project_id, event, distinct_id, time, insert_id, properties, source, ingested_at) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING';

const PG_INSERT =
  'INSERT INTO events (project_id, event, distinct_id, time, insert_id, properties, source, ingested_at) ' +
  'SELECT ?, e, d, t, i, p::jsonb, ?, ? FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[]) AS u(e, d, t, i, p) ' +
  'ON CONFLICT DO NOTHING';

const statements = new WeakMap<Database.Database, Database.Statement>();

async function rawSqlite(db: DbOrTrx): Promise<Database.Database> {
  // Inside a knex transaction this is the transaction's own connection.
  return (await db.client.acquireConnection()) as Database.Database;
}

/** Inserts the events; returns how many were new (the rest were duplicates). */
export async function insertEvents(
  db: DbOrTrx,
  projectId: number,
  source: string,
  events: readonly NormalizedEvent[],
  now: number,
): Promise<number> {
  if (events.length === 0) return 0;
  if (dialect(db) === 'postgres') {
    const res = await db.raw(PG_INSERT, [
      projectId,
      source,
      now,
      events.map((e) => e.event),
      events.map((e) => e.distinctId),
      events.map((e) => e.time),
      events.map((e) => e.insertId),
      events.map((e) => JSON.stringify(e.properties)),
    ]);
    return (res as { rowCount: number }).rowCount;
  }
  const conn = await rawSqlite(db);
  try {
    let stmt = statements.get(conn);
    if (!stmt) {
      stmt = conn.prepare(SQLITE_INSERT);
      statements.set(conn, stmt);
    }
    let inserted = 0;
    for (const e of events) {
      inserted += stmt.run(projectId, e.event, e.distinctId, e.time, e.insertId, JSON.stringify(e.properties), source, now).changes;
    }
    return inserted;
  } finally {
    if (!('isTransaction' in db && db.isTransaction)) await db.client.releaseConnection(conn);
  }
}

export interface EventQuery {
  projectId: number;
  fromMs: number;
  toMs: number;
  events?: string[];
  afterId?: number;
  limit: number;
}

/** One page of events in id order (keyset pagination keeps the single SQLite connection free). */
export async function pageEvents(db: DbOrTrx, q: EventQuery): Promise<StoredEvent[]> {
  let query = db('events')
    .select('id', 'event', 'distinct_id', 'time', 'insert_id', 'properties')
    .where('project_id', q.projectId)
    .andWhere('time', '>=', q.fromMs)
    .andWhere('time', '<', q.toMs)
    .orderBy('id')
    .limit(q.limit);
  if (q.events && q.events.length > 0) query = query.whereIn('event', q.events);
  if (q.afterId !== undefined) query = query.andWhere('id', '>', q.afterId);
  const rows = await query;
  return rows.map((r) => ({
    id: toNumber(r.id),
    event: r.event,
    distinctId: r.distinct_id,
    time: toNumber(r.time),
    insertId: r.insert_id,
    properties: parseJson(r.properties),
  }));
}

export async function countEvents(db: DbOrTrx, projectId: number): Promise<number> {
  const row = await db('events').where('project_id', projectId).count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}

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

/** Events as columns with properties already serialised: the form the inserts consume. */
export interface EventRows {
  event: string[];
  distinctId: string[];
  /** Epoch milliseconds. */
  time: number[];
  insertId: string[];
  /** JSON text of each event's properties. */
  properties: string[];
}

export function toEventRows(events: readonly NormalizedEvent[]): EventRows {
  const n = events.length;
  const rows: EventRows = { event: new Array(n), distinctId: new Array(n), time: new Array(n), insertId: new Array(n), properties: new Array(n) };
  for (let i = 0; i < n; i++) {
    const e = events[i]!;
    rows.event[i] = e.event;
    rows.distinctId[i] = e.distinctId;
    rows.time[i] = e.time;
    rows.insertId[i] = e.insertId;
    rows.properties[i] = JSON.stringify(e.properties);
  }
  return rows;
}

/** Inserts the events; returns how many were new (the rest were duplicates). */
export async function insertEvents(
  db: DbOrTrx,
  projectId: number,
  source: string,
  events: readonly NormalizedEvent[],
  now: number,
): Promise<number> {
  return insertEventRows(db, projectId, source, toEventRows(events), now);
}

/** Inserts prepared rows (see EventRows); returns how many were new. */
export async function insertEventRows(db: DbOrTrx, projectId: number, source: string, rows: EventRows, now: number): Promise<number> {
  const n = rows.event.length;
  if (n === 0) return 0;
  if (dialect(db) === 'postgres') {
    const res = await db.raw(PG_INSERT, [projectId, source, now, rows.event, rows.distinctId, rows.time, rows.insertId, rows.properties]);
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
    for (let i = 0; i < n; i++) {
      inserted += stmt.run(projectId, rows.event[i], rows.distinctId[i], rows.time[i], rows.insertId[i], rows.properties[i], source, now).changes;
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

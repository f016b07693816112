/**
 * The SQL stores' writes: events, identity links and usage, on the connection or transaction
 * given. Dedupe is the unique key `events_dedupe` with ON CONFLICT DO NOTHING, so a replay of any
 * batch is a no-op. SQLite takes the rows through one cached prepared statement on the raw
 * connection (the knex query builder costs more than the insert itself); Postgres takes a whole
 * batch through COPY (pg-copy.ts: straight into `events` when none of its keys is stored, else
 * staged and moved in the dedupe index's order). Links go in by device order: concurrent batches
 * that share devices then wait for each other instead of deadlocking, which they did when two
 * batches linked the same devices in opposite orders.
 */
import type Database from 'better-sqlite3';
import { dialect, toNumber, type DbOrTrx } from '../../db/knex.js';
import { monthOf } from '../../domain/time-buckets.js';
import type { EventRows, IdentityLink } from '../event-rows.js';
import { copyEventRows } from './pg-copy.js';

const COLUMNS = '(project_id, event, distinct_id, time, insert_id, properties, source, ingested_at, device_id)';

const SQLITE_INSERT = `INSERT INTO events ${COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`;

const SQLITE_LINK = 'INSERT INTO identity_links (project_id, device_id, user_id, linked_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING';

// DISTINCT ON (d) … ORDER BY d, ord: the first link of a device in the batch is the one that wins.
const PG_LINKS =
  'INSERT INTO identity_links (project_id, device_id, user_id, linked_at) ' +
  'SELECT ?, d, u, ? FROM (SELECT DISTINCT ON (d) d, u FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(d, u, ord) ORDER BY d, ord) f ' +
  'ORDER BY d ON CONFLICT DO NOTHING';

const statements = new WeakMap<Database.Database, { insert: Database.Statement; link: Database.Statement }>();

export function inTransaction(db: DbOrTrx): boolean {
  return 'isTransaction' in db && db.isTransaction === true;
}

/** Runs `f` with the raw better-sqlite3 connection (inside a knex transaction: its own). */
async function withSqlite<T>(db: DbOrTrx, f: (conn: Database.Database, s: { insert: Database.Statement; link: Database.Statement }) => T): Promise<T> {
  const conn = (await db.client.acquireConnection()) as Database.Database;
  try {
    let s = statements.get(conn);
    if (!s) {
      s = { insert: conn.prepare(SQLITE_INSERT), link: conn.prepare(SQLITE_LINK) };
      statements.set(conn, s);
    }
    return f(conn, s);
  } finally {
    if (!inTransaction(db)) await db.client.releaseConnection(conn);
  }
}

/** Inserts the rows (deduplicating) and their links; returns how many events were new. */
export async function insertEventRows(db: DbOrTrx, projectId: number, source: string, rows: EventRows, now: number): Promise<number> {
  const n = rows.event.length;
  if (n === 0 && rows.links.length === 0) return 0;
  if (dialect(db) === 'postgres') {
    let inserted = 0;
    if (n > 0) {
      inserted = await copyEventRows(db, projectId, source, rows, now);
    }
    await insertLinks(db, projectId, rows.links, now);
    return inserted;
  }
  return withSqlite(db, (_conn, s) => {
    let inserted = 0;
    for (let i = 0; i < n; i++) {
      inserted += s.insert.run(projectId, rows.event[i], rows.distinctId[i], rows.time[i], rows.insertId[i], rows.properties[i], source, now, rows.deviceId[i]).changes;
    }
    for (const l of rows.links) s.link.run(projectId, l.deviceId, l.userId, now);
    return inserted;
  });
}

async function insertLinks(db: DbOrTrx, projectId: number, links: readonly IdentityLink[], now: number): Promise<void> {
  if (links.length === 0) return;
  await db.raw(PG_LINKS, [projectId, now, links.map((l) => l.deviceId), links.map((l) => l.userId)]);
}

/** Adds to this month's per-source count of newly stored events (the billing view). */
export async function addUsage(db: DbOrTrx, projectId: number, source: string, events: number, now: number): Promise<void> {
  if (events <= 0) return;
  await db('usage')
    .insert({ project_id: projectId, month: monthOf(now), source, events })
    .onConflict(['project_id', 'month', 'source'])
    .merge({ events: db.raw('?? + ?', ['usage.events', events]) });
}

export async function usageForMonth(db: DbOrTrx, projectId: number, month: string): Promise<Record<string, number>> {
  const rows = await db('usage').where({ project_id: projectId, month }).select('source', 'events');
  return Object.fromEntries(rows.map((r) => [r.source as string, toNumber(r.events)]));
}

/**
 * Read paths over `events` for the read-back APIs. Pages are keyed on (time, id) — the order of
 * the (project_id, time) index, whose entries end in the row id on SQLite — so each page is an
 * index range scan and nothing holds a cursor (or the single SQLite connection) between pages.
 */
import type { StoredEvent } from './events.repo.js';
import { parseJson, toNumber, type DbOrTrx } from './knex.js';

export interface EventScanQuery {
  projectId: number;
  /** Inclusive, epoch ms. */
  fromMs: number;
  /** Exclusive, epoch ms. */
  toMs: number;
  /** Only these event names (empty or absent: all). */
  events?: readonly string[];
  limit: number;
}

export interface ScanPosition {
  time: number;
  id: number;
}

/** The page of events after `after` in (time, id) order. */
export async function pageEventsByTime(db: DbOrTrx, q: EventScanQuery, after?: ScanPosition): Promise<StoredEvent[]> {
  let query = db('events')
    .select('id', 'event', 'distinct_id', 'time', 'insert_id', 'properties')
    .where('project_id', q.projectId)
    .andWhere('time', '<', q.toMs)
    .orderBy([
      { column: 'time', order: 'asc' },
      { column: 'id', order: 'asc' },
    ])
    .limit(q.limit);
  if (after) {
    // `time >= t` bounds the index range; the OR only settles ties at t.
    query = query.andWhere('time', '>=', Math.max(after.time, q.fromMs)).andWhere((w) => {
      w.where('time', '>', after.time).orWhere('id', '>', after.id);
    });
  } else query = query.andWhere('time', '>=', q.fromMs);
  if (q.events && q.events.length > 0) query = query.whereIn('event', [...q.events]);
  const rows = await query;
  return rows.map((r) => ({
    id: toNumber(r.id),
    event: r.event as string,
    distinctId: r.distinct_id as string,
    time: toNumber(r.time),
    insertId: r.insert_id as string,
    properties: parseJson(r.properties),
  }));
}

export interface EventNameCount {
  event: string;
  count: number;
}

/** Event names with event time at or after `sinceMs`, most frequent first (ties by name). */
export async function eventNamesSince(db: DbOrTrx, projectId: number, sinceMs: number, limit: number): Promise<EventNameCount[]> {
  const rows = await db('events')
    .select('event')
    .count({ n: '*' })
    .where('project_id', projectId)
    .andWhere('time', '>=', sinceMs)
    .groupBy('event')
    .orderBy([
      { column: 'n', order: 'desc' },
      { column: 'event', order: 'asc' },
    ])
    .limit(limit);
  return (rows as Record<string, unknown>[]).map((r) => ({ event: r.event as string, count: toNumber(r.n) }));
}

/** The event catalog and counts over the SQL stores. */
import { toNumber, type DbOrTrx } from '../../db/knex.js';
import type { EventNameCount } from '../event-store.js';

/** Event names with event time at or after `sinceMs`, most frequent first (ties by name). */
export async function eventNamesSql(db: DbOrTrx, projectId: number, sinceMs: number, limit: number): Promise<EventNameCount[]> {
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

export async function countEvents(db: DbOrTrx, projectId: number): Promise<number> {
  const row = await db('events').where('project_id', projectId).count({ n: '*' }).first();
  return toNumber(row?.n ?? 0);
}

import { toNumber, type DbOrTrx } from './knex.js';

export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
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

/**
 * A run row's bounded log (batch imports, migrations): a JSON array of lines, the newest kept.
 * Partitions and migration days on several workers append to one row at once, so each append
 * reads and writes under the row's lock (FOR UPDATE on PostgreSQL; SQLite transactions begin
 * IMMEDIATE, src/db/knex.ts) — a read-then-write outside one would drop the other writer's line.
 */
import { lockedOnPostgres, parseJson, toJson, type DbOrTrx } from './knex.js';
import { logLine } from '../domain/sync-log.js';

/** The stored log (JSON text or array) with one more line, the newest `max` kept. */
export function withLine(stored: unknown, now: number, line: string, max: number): string[] {
  return (parseJson<string[]>(stored) ?? []).concat(logLine(now, line)).slice(-max);
}

export async function appendBoundedLog(db: DbOrTrx, table: string, id: string | number, line: string, now: number, max: number): Promise<void> {
  await db.transaction(async (trx) => {
    const row = await lockedOnPostgres(trx, trx(table).where({ id })).first('log');
    if (!row) return;
    await trx(table).where({ id }).update({ log: toJson(withLine(row.log, now, line, max)), updated_at: now });
  });
}

/**
 * A run row's bounded log (batch imports, migrations): a JSON array of lines, the newest kept.
 * Partitions and migration days on several workers append to one row at once, so each append
 * reads and writes under the row's lock (FOR UPDATE on PostgreSQL; SQLite transactions begin
 * IMMEDIATE, src/db/knex.ts) — a read-then-write outside one would drop the other writer's line.
 */
import { dialect, parseJson, toJson, type DbOrTrx } from './knex.js';
import { logLine } from '../domain/sync-log.js';

export async function appendBoundedLog(db: DbOrTrx, table: string, id: string | number, line: string, now: number, max: number): Promise<void> {
  await db.transaction(async (trx) => {
    const q = trx(table).where({ id });
    const row = await (dialect(trx) === 'postgres' ? q.forUpdate() : q).first('log');
    if (!row) return;
    const log = (parseJson<string[]>(row.log) ?? []).concat(logLine(now, line)).slice(-max);
    await trx(table).where({ id }).update({ log: toJson(log), updated_at: now });
  });
}

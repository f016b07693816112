/**
 * An event-store write and the DATABASE_URL transaction that records it (a run's counts and
 * checkpoint, a snapshot's marks). Where the events live in that database, the write joins the
 * transaction, so the record commits with the events. Elsewhere (ClickHouse) the write runs
 * first, before the transaction opens: a rollback would not undo its insert anyway, and an open
 * SQLite transaction holds the database's write lock for every process while the insert is in
 * flight — a slow insert then turned other processes' writes into errors. A crash between the two
 * replays the write, which the dedupe key makes harmless (docs/scaling.md, `within`).
 */
import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';
import type { EventStore } from './event-store.js';

export async function writeThenRecord<W, T>(
  db: Db,
  events: Pick<EventStore, 'joinsTransactions'>,
  write: (within: Knex.Transaction | undefined) => Promise<W>,
  record: (trx: Knex.Transaction, written: W) => Promise<T>,
): Promise<T> {
  if (events.joinsTransactions) return db.transaction(async (trx) => record(trx, await write(trx)));
  const written = await write(undefined);
  return db.transaction((trx) => record(trx, written));
}

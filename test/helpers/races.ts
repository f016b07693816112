/**
 * Deterministic interleavings for race tests, without sleeps.
 *
 * - PostgreSQL, `holdOpen`: a change made in a transaction left open; the operation under test
 *   runs until it waits on that transaction's locks (seen in pg_blocking_pids), then the change
 *   commits. The operation then decides with the change committed, exactly as when a concurrent
 *   request commits in the middle of it.
 * - SQLite, `beforeNextQuery`: one connection serves every query in order, so an action queued
 *   the moment the operation's matching query starts runs right after that query, before the
 *   operation's next one.
 */
import type { Knex } from 'knex';
import type { Db } from '../../src/db/knex.js';

export interface HeldChange {
  /** Resolves once another backend waits on the held transaction's locks. */
  waitedOn: (timeoutMs?: number) => Promise<void>;
  commit: () => Promise<void>;
  rollback: () => Promise<void>;
}

/** PostgreSQL only: runs `change` in a transaction that stays open until commit() or rollback(). */
export async function holdOpen(db: Db, change: (trx: Knex.Transaction) => PromiseLike<unknown>): Promise<HeldChange> {
  const trx = await db.transaction();
  const pid = (await trx.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  await change(trx);
  return {
    waitedOn: async (timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await db.raw('SELECT count(*)::int AS n FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))', [pid]);
        if (rows[0].n > 0) return;
        if (Date.now() > deadline) throw new Error(`nothing waited on the held transaction within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    commit: async () => void (await trx.commit()),
    rollback: async () => void (await trx.rollback()),
  };
}

export interface QueuedAction {
  /** Whether the matching query was seen (and the action started). */
  fired: () => boolean;
  /** The action's own outcome (resolves at once if it never fired); stops watching. */
  settled: () => Promise<void>;
}

/**
 * SQLite: when the first query whose SQL matches `sql` starts, `action` is started; its queries
 * queue on the one connection right behind that query, ahead of whatever the operation sends next.
 */
export function beforeNextQuery(db: Db, sql: RegExp, action: () => PromiseLike<unknown>): QueuedAction {
  let running: Promise<unknown> | undefined;
  const listener = (q: { sql: string }) => {
    if (running || !sql.test(q.sql)) return;
    db.off('query', listener);
    // then() at once: a knex query builder starts only when asked for its result.
    running = new Promise((resolve, reject) => void action().then(resolve, reject));
  };
  db.on('query', listener);
  return {
    fired: () => running !== undefined,
    settled: async () => {
      db.off('query', listener);
      await running;
    },
  };
}

/**
 * `operation` with `change` committed in its middle: on PostgreSQL the change is held open until
 * the operation waits on it; on SQLite it runs right after the operation's first query matching
 * `sqliteAfter`.
 */
export async function committedDuring<T>(
  kind: string,
  db: Db,
  change: (db: Db) => PromiseLike<unknown>,
  sqliteAfter: RegExp,
  operation: () => Promise<T>,
): Promise<T> {
  if (kind === 'postgres') {
    const held = await holdOpen(db, change);
    try {
      const pending = operation();
      await held.waitedOn();
      await held.commit();
      return await pending;
    } catch (err) {
      await held.rollback().catch(() => undefined);
      throw err;
    }
  }
  const queued = beforeNextQuery(db, sqliteAfter, () => change(db));
  try {
    return await operation();
  } finally {
    await queued.settled();
  }
}

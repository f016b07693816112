/**
 * Group commit for the single SQLite writer. Batches that arrive while a transaction is running
 * wait, then go in together in the next one: a SQLite commit in WAL mode writes every dirty page
 * (the dedupe index pages of 2000 random keys are most of them), so committing 4 × 2000 rows at
 * once costs far less than 4 commits — measured in bench/ingest.bench.ts. Each caller still
 * resolves only after the transaction holding its rows has committed.
 *
 * If a combined transaction fails, its batches are retried one transaction each, so one bad batch
 * never fails the others.
 */
import { setImmediate as yieldToIo } from 'node:timers/promises';
import type { Db } from '../../db/knex.js';
import type { EventRows } from '../event-rows.js';
import { monthOf } from '../../domain/time-buckets.js';
import { addUsage, insertEventRows } from './sql-write.js';

/** Rows per combined transaction, at most (beyond ~20k the commit saving is gone). */
const MAX_ROWS = 20_000;

interface Pending {
  projectId: number;
  source: string;
  rows: EventRows;
  now: number;
  resolve: (inserted: number) => void;
  reject: (err: unknown) => void;
}

class SqliteWriteCombiner {
  private pending: Pending[] = [];
  private running = false;

  constructor(private readonly db: Db) {}

  /** Stores the rows (deduplicating); resolves with how many were new, once committed. */
  store(projectId: number, source: string, rows: EventRows, now: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.pending.push({ projectId, source, rows, now, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.pending.length > 0) {
        // Let the event loop's I/O run first: request bodies that arrived while the last group
        // was written go to the ingest worker now, not after this group too (the inserts are
        // synchronous), and parsed batches that are waiting join this group.
        await yieldToIo();
        const group: Pending[] = [];
        let size = 0;
        while (this.pending.length > 0 && (group.length === 0 || size + this.pending[0]!.rows.event.length <= MAX_ROWS)) {
          const next = this.pending.shift()!;
          size += next.rows.event.length;
          group.push(next);
        }
        try {
          const counts = await this.commit(group);
          group.forEach((g, i) => g.resolve(counts[i]!));
        } catch (err) {
          if (group.length === 1) group[0]!.reject(err);
          else
            for (const g of group) {
              try {
                g.resolve((await this.commit([g]))[0]!);
              } catch (e) {
                g.reject(e);
              }
            }
        }
      }
    } finally {
      this.running = false;
    }
  }

  private commit(group: Pending[]): Promise<number[]> {
    return this.db.transaction(async (trx) => {
      const counts: number[] = [];
      const usage = new Map<string, { projectId: number; source: string; now: number; n: number }>();
      for (const [i, g] of group.entries()) {
        if (i > 0) await yieldToIo();
        const inserted = await insertEventRows(trx, g.projectId, g.source, g.rows, g.now);
        counts.push(inserted);
        const key = `${g.projectId}\u0000${g.source}\u0000${monthOf(g.now)}`;
        const u = usage.get(key);
        if (u) u.n += inserted;
        else usage.set(key, { projectId: g.projectId, source: g.source, now: g.now, n: inserted });
      }
      for (const u of usage.values()) await addUsage(trx, u.projectId, u.source, u.n, u.now);
      return counts;
    });
  }
}

const combiners = new WeakMap<Db, SqliteWriteCombiner>();

/** The combiner of this SQLite database handle (one writer connection, so one combiner). */
export function sqliteWriteCombiner(db: Db): SqliteWriteCombiner {
  let c = combiners.get(db);
  if (!c) {
    c = new SqliteWriteCombiner(db);
    combiners.set(db, c);
  }
  return c;
}

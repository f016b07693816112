/**
 * A batch's event-store write and the SQL transaction that records it (store/write-then-record.ts):
 * where the events live elsewhere (ClickHouse), the write runs before the transaction opens, so a
 * slow insert holds no SQLite write lock — another process can write meanwhile — while a store in
 * DATABASE_URL still writes inside the transaction, committing with its record.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZERO_COUNTS } from '../../src/db/sync-runs.repo.js';
import { emptyEventRows } from '../../src/store/event-rows.js';
import type { EventStore } from '../../src/store/event-store.js';
import { commitEventBatch } from '../../src/warehouse/sync-batch.js';
import { SyncState } from '../../src/warehouse/sync-state.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

/** An event store whose write waits at a gate the test opens, telling the test when it started. */
function gatedStore(joinsTransactions: boolean) {
  let started!: () => void;
  let open!: () => void;
  const writing = new Promise<void>((r) => (started = r));
  const gate = new Promise<void>((r) => (open = r));
  const store = {
    kind: joinsTransactions ? 'sqlite' : 'clickhouse',
    joinsTransactions,
    writeBatch: async (batch: { rows: { event: string[] } }) => {
      started();
      await gate;
      return batch.rows.event.length;
    },
  } as unknown as EventStore;
  return { store, writing, open };
}

/** Whether another connection to the file can take SQLite's write lock right now (no waiting). */
function otherWriterGetsTheLock(file: string): boolean {
  const other = new Database(file);
  try {
    other.pragma('busy_timeout = 0');
    other.prepare('BEGIN IMMEDIATE').run();
    other.prepare('ROLLBACK').run();
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return false;
    throw err;
  } finally {
    other.close();
  }
}

describe('an event write and its record', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterAll(async () => {
    await t.destroy();
  });

  const batch = () => {
    const rows = emptyEventRows();
    rows.event.push('e');
    rows.distinctId.push('u');
    rows.time.push(Date.UTC(2024, 0, 1));
    rows.insertId.push('i-1');
    rows.properties.push('{}');
    rows.deviceId.push(null);
    return { read: 1, rows, rejected: [] };
  };

  it.each([
    [false, true],
    [true, false],
  ])('joinsTransactions %s: another process can write during the event write: %s', async (joins, free) => {
    const g = gatedStore(joins);
    const state = new SyncState({ ...ZERO_COUNTS, rowsTotal: null }, { offset: 0 }, []);
    let recorded = false;
    const committed = commitEventBatch(
      {
        db: t.db,
        events: g.store,
        projectId: 1,
        record: async () => {
          recorded = true;
          return [];
        },
      },
      state,
      batch(),
    );
    await g.writing;
    expect(otherWriterGetsTheLock(t.url)).toBe(free);
    expect(recorded).toBe(false);
    g.open();
    expect(await committed).toBe(true);
    expect(recorded).toBe(true);
    expect(state.counts).toMatchObject({ rowsRead: 1, numImported: 1, numDeduplicated: 0 });
  });
});

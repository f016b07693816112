/**
 * PostgreSQL's optimistic COPY (src/store/sql/pg-copy.ts): a batch first goes straight into
 * `events`, and only a key conflict — with a stored key, with another writer's uncommitted copy,
 * or a deadlock between two such COPYs — sends it down the deduplicating path. These cases are
 * made to happen here with open transactions; the store contract suite covers the plain
 * replays. PostgreSQL only (runs whenever TEST_DATABASE_URL is set, as in .ci/run).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEventRows, type EventRows } from '../../src/store/event-rows.js';
import { createEventStore } from '../../src/store/create-event-store.js';
import type { EventStore } from '../../src/store/event-store.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const T0 = Date.UTC(2026, 0, 5);
let projectSeq = 0;

function rows(ids: readonly string[], properties = (id: string) => JSON.stringify({ id })): EventRows {
  const r = emptyEventRows();
  for (const id of ids) {
    r.event.push('e');
    r.distinctId.push('u');
    r.time.push(T0);
    r.insertId.push(id);
    r.properties.push(properties(id));
    r.deviceId.push(null);
  }
  return r;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(dbKinds().includes('postgres'))('PostgreSQL event COPY: straight in when new, deduplicated on conflict', () => {
  let t: TestDb;
  let store: EventStore;
  beforeAll(async () => {
    t = await createTestDb('postgres');
    store = createEventStore({ EVENT_STORE_URL: undefined }, t.db);
  });
  afterAll(async () => t?.destroy());

  const batch = (projectId: number, ids: string[]) => ({ projectId, source: 'import', now: T0, rows: rows(ids) });

  it('a batch meeting another writer’s uncommitted key waits for it, then stores only its new keys', async () => {
    const p = ++projectSeq;
    const a = await t.db.transaction();
    expect(await store.writeBatch(batch(p, ['k1', 'k2']), { within: a })).toBe(2);
    const b = store.writeBatch(batch(p, ['k4', 'k2']));
    await sleep(150);
    await a.commit();
    expect(await b).toBe(1);
    expect(await store.count(p)).toBe(3);
    expect(await store.usageForMonth(p, '2026-01')).toEqual({ import: 3 });
  });

  /**
   * `a` writes `aHolds` in an open transaction; `b` then writes `bWrites`, which ends up waiting
   * for `a`; `a` then writes `aThen`, which waits for `b`: a deadlock. `b` has waited longest, so
   * PostgreSQL fails b's statement after deadlock_timeout. Both writes must still finish once `a`
   * commits; returns what a's second write and b's write counted.
   */
  async function deadlock(p: number, aHolds: string[], bWrites: string[], aThen: string[]): Promise<[number, number]> {
    const a = await t.db.transaction();
    const b = await t.db.transaction();
    try {
      expect(await store.writeBatch(batch(p, aHolds), { within: a })).toBe(aHolds.length);
      const bWrite = store.writeBatch(batch(p, bWrites), { within: b });
      await sleep(300);
      const aCount = await store.writeBatch(batch(p, aThen), { within: a });
      await a.commit();
      const bCount = await bWrite;
      await b.commit();
      return [aCount, bCount];
    } finally {
      if (!a.isCompleted()) await a.rollback();
      if (!b.isCompleted()) await b.rollback();
    }
  }

  it('two COPYs deadlocked on each other’s keys both finish; each key is stored once', async () => {
    const p = ++projectSeq;
    // b copies k3, then waits for a's k2; a's COPY of k3 waits for b. b, failed, rolls back its
    // savepoint (releasing k3) and deduplicates instead, which waits for a.
    expect(await deadlock(p, ['k1', 'k2'], ['k3', 'k2'], ['k3'])).toEqual([1, 0]);
    expect(await store.count(p)).toBe(3);
  }, 20_000);

  it('a deduplicating insert that loses a deadlock to a COPY tries again and finishes', async () => {
    const p = ++projectSeq;
    expect(await store.writeBatch(batch(p, ['k9']))).toBe(1);
    // b's batch holds a stored key, so it deduplicates: in key order it inserts k0, then waits for
    // a's k1; a's COPY of k0 waits for b. b must try again (after a commits, everything it
    // carries is stored) rather than fail the write.
    expect(await deadlock(p, ['k1'], ['k9', 'k1', 'k0'], ['k0'])).toEqual([1, 0]);
    expect(await store.count(p)).toBe(3);
  }, 20_000);

  it('an error other than a key conflict is not taken for one: the write fails and stores nothing', async () => {
    const p = ++projectSeq;
    const bad = rows(['x1', 'x2'], (id) => (id === 'x2' ? '{"unterminated' : '{}'));
    await expect(store.writeBatch({ projectId: p, source: 'import', now: T0, rows: bad })).rejects.toThrow(/json/i);
    expect(await store.count(p)).toBe(0);
    expect(await store.writeBatch(batch(p, ['x1', 'x2']))).toBe(2);
  });
});

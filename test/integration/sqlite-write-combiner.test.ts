/**
 * Group commit on SQLite: concurrent batches share transactions yet each caller gets its own
 * counts after commit, and a failing batch fails alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../../src/accounts/accounts.service.js';
import { countEvents, eventStoreOf, usageForMonth } from '../helpers/events.js';
import { emptyEventRows, type EventRows } from '../../src/store/event-rows.js';
import { monthOf } from '../../src/domain/time-buckets.js';
import { storeEventRows } from '../../src/ingest/events.ingest.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

function rows(prefix: string, n: number): EventRows {
  const r: EventRows = emptyEventRows();
  for (let i = 0; i < n; i++) {
    r.event.push('e');
    r.distinctId.push(`${prefix}${i}`);
    r.time.push(1_700_000_000_000 + i);
    r.insertId.push(`${prefix}-${i}`);
    r.properties.push(JSON.stringify({ i }));
    r.deviceId.push(null);
  }
  return r;
}

describe('SQLite write combiner', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterAll(async () => t.destroy());

  it('combines concurrent batches, answers each with its own counts after commit', async () => {
    const a = await createProject(t.db, { name: 'a' });
    const b = await createProject(t.db, { name: 'b' });
    const now = Date.now();
    const results = await Promise.all([
      storeEventRows(eventStoreOf(t.db), a.id, 'import', rows('x', 500), now),
      storeEventRows(eventStoreOf(t.db), a.id, 'import', rows('x', 700), now), // 500 of these are duplicates
      storeEventRows(eventStoreOf(t.db), b.id, 'track', rows('y', 300), now),
      storeEventRows(eventStoreOf(t.db), a.id, 'import', rows('z', 0), now),
    ]);
    expect(results).toEqual([
      { imported: 500, deduplicated: 0 },
      { imported: 200, deduplicated: 500 },
      { imported: 300, deduplicated: 0 },
      { imported: 0, deduplicated: 0 },
    ]);
    expect(await countEvents(t.db, a.id)).toBe(700);
    expect(await countEvents(t.db, b.id)).toBe(300);
    expect(await usageForMonth(t.db, a.id, monthOf(now))).toEqual({ import: 700 });
    expect(await usageForMonth(t.db, b.id, monthOf(now))).toEqual({ track: 300 });
  });

  it('batches handed over in one turn of the event loop share one transaction', async () => {
    const p = await createProject(t.db, { name: 'one-turn' });
    const begins: string[] = [];
    const onQuery = (q: { sql: string }) => {
      if (/^begin/i.test(q.sql)) begins.push(q.sql);
    };
    t.db.on('query', onQuery);
    try {
      const now = Date.now();
      await Promise.all(['a', 'b', 'c', 'd'].map((prefix) => storeEventRows(eventStoreOf(t.db), p.id, 'import', rows(`one-${prefix}`, 200), now)));
    } finally {
      t.db.off('query', onQuery);
    }
    // The writer yields to the event loop before it forms a group, so the first batch does not
    // go alone while the other three wait for a second commit.
    expect(begins).toHaveLength(1);
    expect(await countEvents(t.db, p.id)).toBe(800);
  });

  it('a failing batch fails alone; the batches combined with it are committed', async () => {
    const p = await createProject(t.db, { name: 'c' });
    const bad = rows('bad', 10);
    (bad.event as unknown[])[5] = null; // NOT NULL violation
    const now = Date.now();
    const outcomes = await Promise.allSettled([
      storeEventRows(eventStoreOf(t.db), p.id, 'import', rows('g1', 100), now),
      storeEventRows(eventStoreOf(t.db), p.id, 'import', bad, now),
      storeEventRows(eventStoreOf(t.db), p.id, 'import', rows('g2', 100), now),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await countEvents(t.db, p.id)).toBe(200);
  });
});

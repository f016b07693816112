import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents , eventStoreOf } from '../helpers/events.js';
import { usageForMonth } from '../helpers/events.js';
import { monthOf } from '../../src/domain/time-buckets.js';
import { ingestEvents } from '../../src/ingest/events.ingest.js';
import { seedProject } from '../helpers/accounts.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

describe.each(dbKinds())('ingest write path on %s', (kind) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb(kind);
  });
  afterAll(async () => t.destroy());

  it('stores valid events once, rejects invalid ones with a reason, and counts usage', async () => {
    const p = await seedProject(t.db);
    const now = Date.now();
    const records = [
      { event: 'signup', properties: { time: Math.floor(now / 1000) - 60, distinct_id: 'u1', plan: 'pro' } },
      { event: 'login', properties: { time: now - 1000, distinct_id: 'u2', $insert_id: 'abc-123' } },
      { event: '', properties: { time: now, distinct_id: 'u3' } },
      { event: 'x', properties: { time: 'yesterday', distinct_id: 'u3' } },
    ];
    const first = await ingestEvents(eventStoreOf(t.db), p.id, 'import', records, { strict: true, now });
    expect(first.imported).toBe(2);
    expect(first.rejected.map((r) => [r.index, r.field])).toEqual([
      [2, 'event'],
      [3, 'properties.time'],
    ]);
    const replay = await ingestEvents(eventStoreOf(t.db), p.id, 'import', records, { strict: true, now });
    expect(replay).toMatchObject({ imported: 0, deduplicated: 2 });
    expect(await countEvents(t.db, p.id)).toBe(2);
    const stored = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: now + 1, limit: 10 });
    expect(stored.map((e) => [e.event, e.distinctId, e.time])).toEqual([
      ['signup', 'u1', (Math.floor(now / 1000) - 60) * 1000],
      ['login', 'u2', now - 1000],
    ]);
    expect(stored[0]!.properties).toEqual({ plan: 'pro' });
    expect(stored[0]!.insertId).toMatch(/^[0-9a-f]{32}$/);
    expect(await usageForMonth(t.db, p.id, monthOf(now))).toEqual({ import: 2 });
  });
});

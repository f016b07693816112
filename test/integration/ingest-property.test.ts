/**
 * Property-based (fast-check) through the real write path and database: any batch of records —
 * valid, malformed, with NUL characters, unpaired surrogates, huge or tiny times — ends with
 * every valid record stored exactly once and every other one rejected with a reason. Never an
 * exception, never a partially stored batch.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents , eventStoreOf } from '../helpers/events.js';
import { ingestEvents, validateEvents } from '../../src/ingest/events.ingest.js';
import { createProject } from '../../src/accounts/accounts.service.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const NOW = Date.now();
/** Characters that databases handle differently: NUL, lone surrogates, a real pair, plain text. */
const nasty = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\u0000', '\ud800', '\udfff', '😀', '"', '\\', 'é', '\n'),
    fc.string({ minLength: 1, maxLength: 1, unit: 'grapheme-ascii' }),
  ),
  maxLength: 12,
});
const anyTime = fc.oneof(
  fc.integer({ min: Date.UTC(1971, 0, 1), max: NOW }),
  fc.integer({ min: Math.floor(Date.UTC(1971, 0, 1) / 1000), max: Math.floor(NOW / 1000) }),
  fc.double(),
  fc.constantFrom(9e15, 1e300, -1, '1700000000', 'soon'),
);
const record = fc.oneof(
  { weight: 4, arbitrary: fc.record({
    event: fc.oneof(nasty, fc.constant('e')),
    properties: fc.record(
      {
        time: anyTime,
        distinct_id: fc.oneof(nasty, fc.integer()),
        $insert_id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9-]{1,36}$/), nasty),
        note: fc.oneof(nasty, fc.jsonValue({ maxDepth: 4 })),
      },
      { requiredKeys: ['time', 'distinct_id'] },
    ),
  }) },
  { weight: 1, arbitrary: fc.anything() },
);

describe.each(dbKinds())('write path properties on %s', (kind) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb(kind);
  });
  afterAll(async () => t.destroy());

  it('any batch: valid records stored once, the rest rejected with a reason, never a throw', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 15 }), fc.boolean(), async (records, strict) => {
        const p = await createProject(t.db, { name: 'prop' });
        const expected = validateEvents(records, { strict, now: NOW });
        const result = await ingestEvents(eventStoreOf(t.db), p.id, 'import', records, { strict, now: NOW });
        expect(result.rejected).toEqual(expected.rejected);
        for (const r of result.rejected) expect(r.message.length).toBeGreaterThan(0);
        const keys = new Set(expected.events.map((e) => JSON.stringify([e.event, e.distinctId, e.time, e.insertId])));
        expect(result.imported + result.deduplicated).toBe(expected.events.length);
        expect(result.imported).toBe(keys.size);
        expect(await countEvents(t.db, p.id)).toBe(keys.size);
        const stored = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: 9e15, limit: 100 });
        for (const s of stored) {
          const e = expected.events.find((x) => x.insertId === s.insertId && x.event === s.event && x.distinctId === s.distinctId && x.time === s.time)!;
          // Properties are stored as JSON, so the model is their JSON form: -0 (which fast-check's
          // jsonValue makes and JSON.parse('-0') gives) is stored as 0, as JSON.stringify writes it.
          expect(s.properties).toEqual(JSON.parse(JSON.stringify(e.properties)));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('rejects NUL characters and unpaired surrogates per record, naming the field', async () => {
    const p = await createProject(t.db, { name: 'prop' });
    const result = await ingestEvents(
      eventStoreOf(t.db),
      p.id,
      'import',
      [
        { event: 'ok', properties: { time: NOW, distinct_id: 'u', s: 'fine 😀' } },
        { event: 'nul', properties: { time: NOW, distinct_id: 'u', s: 'a\u0000b' } },
        { event: 'sur', properties: { time: NOW, distinct_id: 'u', nested: { list: ['\ud800'] } } },
        { event: 'key', properties: { time: NOW, distinct_id: 'u', 'k\u0000': 1 } },
        { event: 'e\u0000', properties: { time: NOW, distinct_id: 'u' } },
      ],
      { strict: true, now: NOW },
    );
    expect(result.imported).toBe(1);
    expect(result.rejected.map((r) => [r.index, r.field])).toEqual([
      [1, 'properties.s'],
      [2, 'properties.nested'],
      [3, 'properties'],
      [4, 'event'],
    ]);
  });
});

/**
 * Property-based tests (fast-check) of event validation and time normalisation: any input yields
 * either a normalised event or a clear per-record rejection — never an exception — and the
 * seconds-vs-milliseconds rule holds for every number.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_LIMITS, normalizeTime, validateEventRecord, type EventRules } from '../../src/domain/event-record.js';
import { validateEvents } from '../../src/ingest/events.ingest.js';

const NOW = Date.UTC(2025, 5, 1);
const rules = (over: Partial<EventRules> = {}): EventRules => ({ ...DEFAULT_EVENT_LIMITS, strictTime: true, now: NOW, ...over });

/** Times in every form clients send: seconds, ms, strings, junk. */
const anyTime = fc.oneof(
  fc.integer({ min: 0, max: 2_000_000_000 }),
  fc.integer({ min: 100_000_000_000, max: 4_000_000_000_000 }),
  fc.double({ noNaN: false }),
  fc.integer({ min: 0, max: 4_000_000_000_000 }).map(String),
  fc.string(),
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
);

const anyProps = fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 5 }), { maxKeys: 8 });

/** Records that look like events, with any field possibly wrong, plus arbitrary junk. */
const anyRecord = fc.oneof(
  fc.record(
    {
      event: fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.constant(undefined)),
      properties: fc.oneof(
        fc.record(
          {
            time: anyTime,
            distinct_id: fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.double(), fc.constant(null)),
            $insert_id: fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[A-Za-z0-9-]{1,36}$/), fc.integer()),
            token: fc.string(),
          },
          { requiredKeys: [] },
        ).chain((base) => anyProps.map((extra) => ({ ...extra, ...base }))),
        fc.jsonValue({ maxDepth: 2 }),
      ),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 3 }),
  fc.anything(),
);

function isRejection(r: { index: number; field: string; message: string }, index: number) {
  return r.index === index && typeof r.field === 'string' && typeof r.message === 'string' && r.message.length > 0;
}

describe('normalizeTime', () => {
  it('treats a value below 1e11 as seconds and anything else as milliseconds', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e13, noNaN: true }), (n) => {
        const ms = normalizeTime(n);
        expect(ms).toBe(Math.round(n < 1e11 ? n * 1000 : n));
        expect(Number.isSafeInteger(ms)).toBe(true);
        expect(normalizeTime(String(n))).toBe(/e/i.test(String(n)) ? undefined : ms);
      }),
    );
  });

  it('is exact for integer seconds and milliseconds, so both spellings of one instant agree', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999_999_999 }), (s) => {
        expect(normalizeTime(s)).toBe(s * 1000);
        const ms = s * 1000;
        if (ms >= 1e11) expect(normalizeTime(ms)).toBe(ms);
      }),
    );
  });

  it('refuses instants beyond the range of a Date (they would overflow storage)', () => {
    fc.assert(
      fc.property(fc.double({ min: 8.64e15 + 1, noNaN: true, noDefaultInfinity: true }), (n) => {
        expect(normalizeTime(n)).toBeUndefined();
      }),
    );
  });

  it('refuses negatives, non-finite numbers and non-numeric text (undefined, never a throw)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double({ max: -Number.MIN_VALUE }), fc.constantFrom(NaN, Infinity, -Infinity), fc.string().filter((s) => !/^\s*\d+(\.\d+)?\s*$/.test(s)), fc.anything().filter((v) => typeof v !== 'number' && typeof v !== 'string')), (v) => {
        expect(normalizeTime(v)).toBeUndefined();
      }),
    );
  });
});

describe('validateEventRecord', () => {
  it('any input: a normalised event or a clear rejection, never an exception', () => {
    fc.assert(
      fc.property(anyRecord, fc.boolean(), fc.option(fc.integer({ min: 0, max: 10 * 86_400_000 }), { nil: undefined }), (raw, strictTime, maxAgeMs) => {
        const out = validateEventRecord(raw, 7, rules({ strictTime, maxAgeMs }));
        if (!out.ok) {
          expect(isRejection(out.reject, 7)).toBe(true);
          return;
        }
        const e = out.event;
        expect(typeof e.event).toBe('string');
        expect(e.event.length).toBeGreaterThan(0);
        expect(typeof e.distinctId).toBe('string');
        expect(Number.isSafeInteger(e.time) && e.time >= 0).toBe(true);
        expect(e.insertId).toMatch(/^[A-Za-z0-9-]{1,36}$/);
        for (const k of ['time', 'distinct_id', '$insert_id', 'token']) expect(Object.prototype.hasOwnProperty.call(e.properties, k)).toBe(false);
        if (strictTime) {
          expect(e.time).toBeGreaterThanOrEqual(Date.UTC(1971, 0, 1));
          expect(e.time).toBeLessThanOrEqual(NOW + 3_600_000);
        }
        if (maxAgeMs !== undefined) expect(e.time).toBeGreaterThanOrEqual(NOW - maxAgeMs);
        // What is stored survives a JSON round trip unchanged (no key silently lost).
        expect(JSON.parse(JSON.stringify(e.properties))).toEqual(e.properties);
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts every well-formed record, keeping its properties, with a deterministic insert id', () => {
    const good = fc.record({
      event: fc.string({ minLength: 1, maxLength: 50 }),
      // As milliseconds only from 1e11 on (1973-03-03): below that a number means seconds.
      time: fc.integer({ min: 1e11, max: NOW }),
      seconds: fc.boolean(),
      distinct: fc.string({ maxLength: 50 }),
      props: fc.dictionary(
        fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !['time', 'distinct_id', '$insert_id', 'token', '__proto__'].includes(k)),
        fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 })),
        { maxKeys: 20 },
      ),
    });
    fc.assert(
      fc.property(good, ({ event, time, seconds, distinct, props }) => {
        const t = seconds ? Math.floor(time / 1000) : time;
        const raw = { event, properties: { ...props, time: t, distinct_id: distinct } };
        const a = validateEventRecord(raw, 0, rules());
        const b = validateEventRecord(JSON.parse(JSON.stringify(raw)), 0, rules());
        // Well-formed JSON strings only: lone surrogates are a separate, rejected case.
        const wellFormed = [event, distinct, ...Object.keys(props), ...Object.values(props).flat()].every(
          (s) => typeof s !== 'string' || (s as string & { isWellFormed(): boolean }).isWellFormed(),
        );
        if (!wellFormed) return;
        expect(a.ok).toBe(true);
        if (!a.ok || !b.ok) return;
        expect(a.event).toEqual({ event, distinctId: distinct, time: seconds ? t * 1000 : time, insertId: expect.stringMatching(/^[0-9a-f]{32}$/), properties: props });
        expect(b.event.insertId).toBe(a.event.insertId);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps a property named __proto__ as data (JSON.parse makes it an own key)', () => {
    const raw = JSON.parse('{"event":"e","properties":{"time":1700000000,"distinct_id":"u","__proto__":{"x":1},"constructor":2}}');
    const out = validateEventRecord(raw, 0, rules({ strictTime: false }));
    expect(out.ok).toBe(true);
    if (out.ok) {
      expect(Object.getPrototypeOf(out.event.properties)).toBe(Object.prototype);
      expect(JSON.parse(JSON.stringify(out.event.properties))).toEqual(JSON.parse('{"__proto__":{"x":1},"constructor":2}'));
    }
  });

  it('strict mode rejects times before 1971 and more than an hour ahead, naming properties.time', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: Date.UTC(1971, 0, 1) / 1000 - 1 }), fc.integer({ min: NOW + 3_600_001, max: NOW + 1e12 })), (time) => {
        const out = validateEventRecord({ event: 'e', properties: { time, distinct_id: 'u' } }, 0, rules());
        expect(out.ok).toBe(false);
        if (!out.ok) expect(out.reject.field).toBe('properties.time');
      }),
    );
  });

  it('a batch splits into events and rejections that account for every record', () => {
    fc.assert(
      fc.property(fc.array(anyRecord, { maxLength: 30 }), (records) => {
        const { events, rejected } = validateEvents(records, { strict: true, now: NOW });
        expect(events.length + rejected.length).toBe(records.length);
        expect(new Set(rejected.map((r) => r.index)).size).toBe(rejected.length);
      }),
      { numRuns: 300 },
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeTime } from '../../src/domain/event-record.js';
import { enrich, toExportRecord } from '../../src/domain/export-record.js';
import { MAX_REPORT_CELLS, segmentationFromCells, segmentLabels } from '../../src/domain/segmentation.js';
import { bucketCount, bucketLabel, bucketSeries, bucketStart, exportSeconds, parseDay } from '../../src/domain/time-buckets.js';

const day = (s: string) => parseDay(s)!;
const range = (from: string, to: string) => ({ fromMs: day(from), toMs: day(to) + 86_400_000 });

describe('dates and buckets (UTC)', () => {
  it('parses real YYYY-MM-DD days only', () => {
    expect(parseDay('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-1-01', '20240101', '2024-01-01T00:00:00Z', 'yesterday', ''])
      expect(parseDay(bad)).toBeUndefined();
  });

  it('labels buckets like Mixpanel segmentation', () => {
    const t = Date.UTC(2024, 4, 15, 13, 47, 12, 345); // Wednesday
    expect(bucketLabel(bucketStart(t, 'minute'), 'minute')).toBe('2024-05-15 13:47:00');
    expect(bucketLabel(bucketStart(t, 'hour'), 'hour')).toBe('2024-05-15 13:00:00');
    expect(bucketLabel(bucketStart(t, 'day'), 'day')).toBe('2024-05-15');
    expect(bucketLabel(bucketStart(t, 'week'), 'week')).toBe('2024-05-13'); // Monday
    expect(bucketLabel(bucketStart(t, 'month'), 'month')).toBe('2024-05-01');
    // A Monday is its own week start; a Sunday belongs to the Monday before.
    expect(bucketLabel(bucketStart(Date.UTC(2024, 4, 13), 'week'), 'week')).toBe('2024-05-13');
    expect(bucketLabel(bucketStart(Date.UTC(2024, 4, 19, 23), 'week'), 'week')).toBe('2024-05-13');
  });

  it('series cover the inclusive range and bucketCount agrees with them', () => {
    expect(bucketSeries(range('2024-01-30', '2024-02-02'), 'day')).toEqual(['2024-01-30', '2024-01-31', '2024-02-01', '2024-02-02']);
    expect(bucketSeries(range('2024-01-30', '2024-03-02'), 'month')).toEqual(['2024-01-01', '2024-02-01', '2024-03-01']);
    expect(bucketSeries(range('2024-01-01', '2024-01-01'), 'hour')).toHaveLength(24);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 0, max: 400 }), fc.constantFrom('hour', 'day', 'week', 'month' as const), (d, len, unit) => {
        const r = { fromMs: d * 86_400_000, toMs: (d + len + 1) * 86_400_000 };
        expect(bucketCount(r, unit)).toBe(bucketSeries(r, unit).length);
      }),
      { numRuns: 200 },
    );
  });

  it('export time is seconds, fractional only for sub-second times, and re-imports to the same ms', () => {
    expect(exportSeconds(1_700_000_000_000)).toBe(1_700_000_000);
    expect(exportSeconds(1_700_000_000_123)).toBe(1_700_000_000.123);
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2100, 0, 1) }), (ms) => {
        expect(normalizeTime(exportSeconds(ms))).toBe(ms);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('export records and lookup enrichment', () => {
  it('puts the key columns first and keeps stored properties', () => {
    const r = toExportRecord({ event: 'e', distinctId: 'u', time: 1_000_500, insertId: 'i-1', properties: { a: 1, $source: 'x' } });
    expect(r).toEqual({ event: 'e', properties: { time: 1000.5, distinct_id: 'u', $insert_id: 'i-1', a: 1, $source: 'x' } });
    expect(Object.keys(r.properties).slice(0, 3)).toEqual(['time', 'distinct_id', '$insert_id']);
  });

  it('keeps a stored "__proto__" property as data', () => {
    const stored = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const r = toExportRecord({ event: 'e', distinctId: 'u', time: 0, insertId: 'i', properties: stored });
    expect(JSON.stringify(r.properties)).toContain('"__proto__":{"polluted":true}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('adds <property>.<column> from the matching row, never overwriting stored properties', () => {
    const props: Record<string, unknown> = { song_id: 7, 'song_id.genre': 'kept', other: 'x' };
    enrich(props, [{ mappedProperty: 'song_id', rows: new Map([['7', { genre: 'jazz', year: 1959 }]]) }]);
    expect(props).toEqual({ song_id: 7, 'song_id.genre': 'kept', 'song_id.year': 1959, other: 'x' });
    const none: Record<string, unknown> = { song_id: 8 };
    enrich(none, [{ mappedProperty: 'song_id', rows: new Map([['7', { genre: 'jazz' }]]) }]);
    expect(none).toEqual({ song_id: 8 });
  });
});

describe('segmentation counting', () => {
  it('caps the cells returned', () => {
    const cells = Array.from({ length: 1000 }, (_, i) => ({ segment: `s${i}`, bucket: Date.UTC(2024, 0, 1), value: 1 }));
    const r = segmentationFromCells(cells, range('2024-01-01', '2024-01-01'), 'minute', [], 10_000);
    expect(Object.keys(r.values).length * r.series.length).toBeLessThanOrEqual(MAX_REPORT_CELLS);
  });

  it('labels segment values; a list counts under each distinct element', () => {
    expect(segmentLabels(undefined)).toEqual(['undefined']);
    expect(segmentLabels(null)).toEqual(['null']);
    expect(segmentLabels(true)).toEqual(['true']);
    expect(segmentLabels(3)).toEqual(['3']);
    expect(segmentLabels(['a', 'b', 'a'])).toEqual(['a', 'b']);
    expect(segmentLabels({ x: 1 })).toEqual(['{"x":1}']);
  });
});

describe('segmentationFromCells', () => {
  const range = { fromMs: Date.UTC(2026, 0, 1), toMs: Date.UTC(2026, 0, 4) };
  it('fills zeros, keeps requested segments, ranks by total then label, limits', () => {
    const cells = [
      { segment: 'b', bucket: Date.UTC(2026, 0, 1), value: 2 },
      { segment: 'a', bucket: Date.UTC(2026, 0, 3), value: 1.5 },
      { segment: 'a', bucket: Date.UTC(2026, 0, 1), value: 0.5 },
      { segment: 'c', bucket: Date.UTC(2026, 0, 2), value: 1 },
    ];
    const out = segmentationFromCells(cells, range, 'day', ['zero'], 10);
    expect(out.series).toEqual(['2026-01-01', '2026-01-02', '2026-01-03']);
    expect(Object.keys(out.values)).toEqual(['a', 'b', 'c', 'zero']);
    expect(out.values.a).toEqual({ '2026-01-01': 0.5, '2026-01-02': 0, '2026-01-03': 1.5 });
    expect(out.values.zero).toEqual({ '2026-01-01': 0, '2026-01-02': 0, '2026-01-03': 0 });
    expect(Object.keys(segmentationFromCells(cells, range, 'day', [], 1).values)).toEqual(['a']);
  });
});

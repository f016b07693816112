/**
 * isoTime formats epoch ms by arithmetic; it must give exactly Date#toISOString's text, at every
 * calendar edge and for what it hands back to Date.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTime, isoTimeOrNull } from '../../src/domain/iso-time.js';

const dateText = (ms: number) => new Date(ms).toISOString();

describe('isoTime', () => {
  it('equals toISOString for any whole millisecond in 1970–9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799_999 }), (ms) => {
        expect(isoTime(ms)).toBe(dateText(ms));
      }),
      { numRuns: 20_000 },
    );
  });

  it('equals toISOString at the calendar edges', () => {
    const edges = [
      '1970-01-01T00:00:00.000Z',
      '1970-12-31T23:59:59.999Z',
      '1972-02-29T12:00:00.000Z', // leap day
      '1999-12-31T23:59:59.999Z',
      '2000-02-29T00:00:00.000Z', // a leap century
      '2000-03-01T00:00:00.000Z',
      '2100-02-28T23:59:59.999Z', // 2100 is not a leap year
      '2100-03-01T00:00:00.000Z',
      '2024-06-01T09:05:03.007Z',
      '9999-12-31T23:59:59.999Z',
    ];
    for (const text of edges) expect(isoTime(Date.parse(text))).toBe(text);
    // Every day of a leap year and the next, at noon: month and day lengths.
    for (let day = 0; day < 731; day++) {
      const ms = Date.UTC(2024, 0, 1) + day * 86_400_000 + 43_200_000;
      expect(isoTime(ms)).toBe(dateText(ms));
    }
  });

  it('hands what it does not format itself to Date: fractions, years before 1970 and from 10000', () => {
    for (const ms of [1.5, 1_700_000_000_000.25, -1, -86_400_001, 253_402_300_800_000, 8.64e15]) {
      expect(isoTime(ms)).toBe(dateText(ms));
    }
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });

  it('isoTimeOrNull keeps null', () => {
    expect(isoTimeOrNull(null)).toBeNull();
    expect(isoTimeOrNull(0)).toBe('1970-01-01T00:00:00.000Z');
  });
});

import { describe, expect, it } from 'vitest';
import { latestSlotBetween, repeatsEarlierWallTime } from '../../src/domain/sync-schedule.js';

const at = (iso: string) => Date.parse(iso);

describe('latestSlotBetween', () => {
  it('takes the latest matching minute in the window, in the scheduler time zone', () => {
    expect(latestSlotBetween('0 * * * *', 'UTC', at('2024-06-01T09:10:00Z'), at('2024-06-01T12:34:56Z'))).toBe(at('2024-06-01T12:00:00Z'));
    expect(latestSlotBetween('0 0 * * *', 'Europe/Berlin', at('2024-06-01T00:00:00Z'), at('2024-06-02T12:00:00Z'))).toBe(at('2024-06-01T22:00:00Z'));
    expect(latestSlotBetween('0 * * * *', 'UTC', at('2024-06-01T12:00:00Z'), at('2024-06-01T12:59:00Z'))).toBeUndefined();
  });

  it('in the hour repeated when clocks go back, takes the first 01:30 as the live task does, not the second', () => {
    // New York, 2024-11-03: 01:00–01:59 EDT (05:00–05:59Z), then 01:00–01:59 EST again (06:00–06:59Z).
    const slot = latestSlotBetween('30 1 * * *', 'America/New_York', at('2024-11-03T04:00:00Z'), at('2024-11-03T06:45:00Z'));
    expect(new Date(slot!).toISOString()).toBe('2024-11-03T05:30:00.000Z');
    expect(latestSlotBetween('0 * * * *', 'America/New_York', at('2024-11-03T05:30:00Z'), at('2024-11-03T06:10:00Z'))).toBeUndefined();
  });
});

describe('repeatsEarlierWallTime', () => {
  it('is true only for the second pass through a repeated wall-clock time', () => {
    expect(repeatsEarlierWallTime(at('2024-11-03T06:30:00Z'), 'America/New_York')).toBe(true);
    expect(repeatsEarlierWallTime(at('2024-11-03T05:30:00Z'), 'America/New_York')).toBe(false);
    expect(repeatsEarlierWallTime(at('2024-10-27T01:30:00Z'), 'Europe/Berlin')).toBe(true);
    expect(repeatsEarlierWallTime(at('2024-10-27T00:30:00Z'), 'Europe/Berlin')).toBe(false);
    expect(repeatsEarlierWallTime(at('2024-11-03T06:30:00Z'), 'UTC')).toBe(false);
    // Lord Howe goes back half an hour: 01:30–01:59 come twice.
    expect(repeatsEarlierWallTime(at('2024-04-06T15:15:00Z'), 'Australia/Lord_Howe')).toBe(true);
  });
});

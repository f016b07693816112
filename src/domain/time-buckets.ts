/**
 * Dates and time buckets of the read-back APIs. Everything is UTC: `from_date`/`to_date` are
 * inclusive UTC days; buckets are labelled the way Mixpanel's segmentation labels them
 * (`YYYY-MM-DD` for day, week and month, `YYYY-MM-DD HH:00:00` for hour, `YYYY-MM-DD HH:MM:00`
 * for minute). Weeks start on Monday (ISO); a month bucket is labelled with its first day.
 */

export const DAY_MS = 86_400_000;
export type Unit = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const UNITS: readonly Unit[] = ['minute', 'hour', 'day', 'week', 'month'];

/** Epoch ms of 00:00 UTC of a `YYYY-MM-DD` day, or undefined when it is not a real date. */
export function parseDay(value: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  // Date.UTC rolls 2023-02-30 over to March; a real date survives the round trip.
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return undefined;
  return ms;
}

export interface DayRange {
  /** Inclusive start, epoch ms. */
  fromMs: number;
  /** Exclusive end: 00:00 UTC of the day after `to_date`. */
  toMs: number;
}

/** The UTC month (`YYYY-MM`) of an instant: the usage (billing) period. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

export function formatDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Start (epoch ms) of the bucket holding `ms`. */
export function bucketStart(ms: number, unit: Unit): number {
  switch (unit) {
    case 'minute':
      return Math.floor(ms / 60_000) * 60_000;
    case 'hour':
      return Math.floor(ms / 3_600_000) * 3_600_000;
    case 'day':
      return Math.floor(ms / DAY_MS) * DAY_MS;
    case 'week': {
      const day = Math.floor(ms / DAY_MS) * DAY_MS;
      // 1970-01-01 was a Thursday: (weekday + 6) % 7 is days since Monday.
      const sinceMonday = (new Date(day).getUTCDay() + 6) % 7;
      return day - sinceMonday * DAY_MS;
    }
    case 'month': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

function nextBucket(start: number, unit: Unit): number {
  switch (unit) {
    case 'minute':
      return start + 60_000;
    case 'hour':
      return start + 3_600_000;
    case 'day':
      return start + DAY_MS;
    case 'week':
      return start + 7 * DAY_MS;
    case 'month': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

export function bucketLabel(start: number, unit: Unit): string {
  const iso = new Date(start).toISOString();
  if (unit === 'minute') return `${iso.slice(0, 10)} ${iso.slice(11, 16)}:00`;
  if (unit === 'hour') return `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00:00`;
  return iso.slice(0, 10);
}

/** How many buckets of `unit` the range spans (without building them). */
export function bucketCount(range: DayRange, unit: Unit): number {
  const first = bucketStart(range.fromMs, unit);
  const last = bucketStart(range.toMs - 1, unit);
  switch (unit) {
    case 'minute':
      return (last - first) / 60_000 + 1;
    case 'hour':
      return (last - first) / 3_600_000 + 1;
    case 'day':
      return (last - first) / DAY_MS + 1;
    case 'week':
      return (last - first) / (7 * DAY_MS) + 1;
    case 'month': {
      const a = new Date(first);
      const b = new Date(last);
      return (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + (b.getUTCMonth() - a.getUTCMonth()) + 1;
    }
  }
}

/** Every bucket label of the range, in time order. */
export function bucketSeries(range: DayRange, unit: Unit): string[] {
  const out: string[] = [];
  for (let s = bucketStart(range.fromMs, unit); s < range.toMs; s = nextBucket(s, unit)) out.push(bucketLabel(s, unit));
  return out;
}

/**
 * The export's `time`: seconds since the epoch, fractional only when the stored milliseconds
 * are not whole seconds (so a re-import of the line restores the same millisecond).
 */
export function exportSeconds(ms: number): number {
  // Division yields an integer for whole seconds; otherwise the nearest double, which
  // normalizeTime's Math.round(seconds * 1000) maps back to exactly `ms`.
  return ms / 1000;
}

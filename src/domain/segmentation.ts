/**
 * Counting events into (segment × time bucket) cells for the insights report, and shaping the
 * result like Mixpanel's segmentation: `series` (every bucket label of the range) and `values`
 * (segment → bucket label → count, zeros included). Pure.
 */
import { bucketLabel, bucketSeries, bucketStart, type DayRange, type Unit } from './time-buckets.js';

/** Segments tracked before the report refuses (an `on` over unique ids would exhaust memory). */
export const MAX_TRACKED_SEGMENTS = 100_000;
/** Cells (segments × buckets) a report may return; `limit` is lowered to stay under it. */
export const MAX_REPORT_CELLS = 1_000_000;

export class TooManySegmentsError extends Error {
  constructor() {
    super(`the segment expression has more than ${MAX_TRACKED_SEGMENTS} distinct values; narrow it with 'where'`);
    this.name = 'TooManySegmentsError';
  }
}

/** The label(s) a segment value counts under: a list counts once under each distinct element. */
export function segmentLabels(value: unknown): string[] {
  if (Array.isArray(value)) {
    const labels = new Set(value.map(labelOf));
    return labels.size > 0 ? [...labels] : ['undefined'];
  }
  return [labelOf(value)];
}

function labelOf(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

export interface SegmentationResult {
  series: string[];
  values: Record<string, Record<string, number>>;
}

export class SegmentCounter {
  private readonly cells = new Map<string, Map<number, number>>();
  private readonly totals = new Map<string, number>();

  constructor(
    private readonly range: DayRange,
    private readonly unit: Unit,
    /** Segments that appear even with no events (e.g. the requested event names). */
    fixed: readonly string[] = [],
  ) {
    for (const s of fixed) this.ensure(s);
  }

  private ensure(segment: string): Map<number, number> {
    let row = this.cells.get(segment);
    if (!row) {
      if (this.cells.size >= MAX_TRACKED_SEGMENTS) throw new TooManySegmentsError();
      row = new Map();
      this.cells.set(segment, row);
      this.totals.set(segment, 0);
    }
    return row;
  }

  add(timeMs: number, segment: string): void {
    const row = this.ensure(segment);
    const bucket = bucketStart(timeMs, this.unit);
    row.set(bucket, (row.get(bucket) ?? 0) + 1);
    this.totals.set(segment, this.totals.get(segment)! + 1);
  }

  /** The top `limit` segments by total (ties by label), each with every bucket of the series. */
  result(limit: number): SegmentationResult {
    const series = bucketSeries(this.range, this.unit);
    const cap = Math.max(1, Math.min(limit, Math.floor(MAX_REPORT_CELLS / Math.max(1, series.length))));
    const top = [...this.totals.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, cap)
      .map(([segment]) => segment);
    // Null prototype: a segment named "__proto__" must become a key, not a prototype.
    const values = Object.create(null) as Record<string, Record<string, number>>;
    for (const segment of top) {
      const row: Record<string, number> = {};
      for (const label of series) row[label] = 0;
      for (const [bucket, n] of this.cells.get(segment)!) row[bucketLabel(bucket, this.unit)] = n;
      values[segment] = row;
    }
    return { series, values };
  }
}

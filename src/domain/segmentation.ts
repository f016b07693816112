/**
 * Segment labels of the insights report, and its result shaped like Mixpanel's segmentation:
 * `series` (every bucket label of the range) and `values` (segment → bucket label → value, zeros
 * included), from the (segment × time bucket) cells the event store counted. Pure.
 */
import { bucketLabel, bucketSeries, type DayRange, type Unit } from './time-buckets.js';

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

/** One (segment, bucket) value of a report as the event store computes it (store report()). */
export interface ReportCellLike {
  segment: string;
  /** Epoch ms of the bucket's start (bucketStart). */
  bucket: number;
  value: number;
}

/**
 * A store's report cells shaped like Mixpanel's segmentation: the top `limit` segments by the sum
 * of their values (ties by label), each with every bucket of the range (zeros included); `fixed`
 * segments (the requested event names) appear even without cells. Pure; the store did the counting.
 */
export function segmentationFromCells(
  cells: readonly ReportCellLike[],
  range: DayRange,
  unit: Unit,
  fixed: readonly string[],
  limit: number,
): SegmentationResult {
  const series = bucketSeries(range, unit);
  const rows = new Map<string, { total: number; cells: Map<string, number> }>();
  for (const s of fixed) rows.set(s, { total: 0, cells: new Map() });
  for (const c of cells) {
    let row = rows.get(c.segment);
    if (!row) {
      if (rows.size >= MAX_TRACKED_SEGMENTS) throw new TooManySegmentsError();
      row = { total: 0, cells: new Map() };
      rows.set(c.segment, row);
    }
    row.total += c.value;
    const label = bucketLabel(c.bucket, unit);
    row.cells.set(label, (row.cells.get(label) ?? 0) + c.value);
  }
  const cap = Math.max(1, Math.min(limit, Math.floor(MAX_REPORT_CELLS / Math.max(1, series.length))));
  const top = [...rows.entries()]
    .sort((a, b) => b[1].total - a[1].total || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, cap);
  const values = Object.create(null) as Record<string, Record<string, number>>;
  for (const [segment, row] of top) {
    const out: Record<string, number> = {};
    for (const label of series) out[label] = row.cells.get(label) ?? 0;
    values[segment] = out;
  }
  return { series, values };
}

/**
 * Turns the values @google-cloud/bigquery hands out (it parses the REST `f`/`v` rows by the result
 * schema) into what the sync maps into events:
 * - INT64 as Numbers while exact, every digit as a string past ±2^53-1 (the client's
 *   `integerTypeCastFunction` hook, so nothing is rounded on the way);
 * - NUMERIC / BIGNUMERIC (big.js values) and FLOAT64 as Numbers (non-finite stay strings);
 * - TIMESTAMP as a Date at the millisecond (its epoch ms; microseconds are truncated), DATETIME
 *   and DATE as Dates read as UTC — the same shape the other sources give times;
 * - JSON parsed; REPEATED as arrays and RECORD as objects of converted values;
 * - TIME, GEOGRAPHY as their text, BYTES as base64 (BigQuery's own text form).
 */
import { BigQueryDate, BigQueryDatetime, BigQueryTime, BigQueryTimestamp, Geography } from '@google-cloud/bigquery';

export function integerValue(raw: string): number | string {
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : raw;
}

/** The client options that make it hand out the raw material `plainValue` expects. */
export const PARSE_OPTIONS = { wrapIntegers: { integerTypeCastFunction: integerValue }, parseJSON: true } as const;

function isBig(v: object): v is { toString(): string } {
  return 'c' in v && 'e' in v && 's' in v && typeof (v as { toFixed?: unknown }).toFixed === 'function';
}

function utcDate(text: string): Date | string {
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text.length === 10 ? `${text}T00:00:00` : text}Z`);
  return Number.isFinite(ms) ? new Date(ms) : text;
}

export function plainValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object') return typeof v === 'number' && !Number.isFinite(v) ? String(v) : v;
  if (Array.isArray(v)) return v.map(plainValue);
  if (v instanceof Date) return v;
  if (v instanceof BigQueryTimestamp) return utcDate(v.value);
  if (v instanceof BigQueryDatetime || v instanceof BigQueryDate) return utcDate(v.value);
  if (v instanceof BigQueryTime || v instanceof Geography) return v.value;
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (isBig(v)) {
    const n = Number(v.toString());
    return Number.isFinite(n) ? n : v.toString();
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = plainValue(x);
  return out;
}

/** A parsed client row as a `{column: value}` record of plain values. */
export function plainRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in row) out[k] = plainValue(row[k]);
  return out;
}

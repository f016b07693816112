/**
 * Turning warehouse cell values into event/profile values. Pure. Sources hand us strings,
 * numbers, booleans, bigints, Dates, Buffers and parsed JSON; events want JSON values.
 */
import { normalizeTime } from './event-record.js';

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * A date-time string as epoch ms. Accepts ISO 8601 and the SQL forms sources print
 * (`2024-05-01 10:00:00.123456+00`); without a zone the value is taken as UTC (warehouses
 * conventionally store UTC). Fractions below a millisecond are truncated.
 */
export function parseDateTime(text: string): number | undefined {
  const m = DATE_TIME.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 60) return undefined;
  let ms = Date.UTC(Number(y), month - 1, day, Number(h), Number(mi), Number(s), Number(frac.padEnd(3, '0').slice(0, 3)));
  if (new Date(ms).getUTCDate() !== day) return undefined; // 2024-02-31 and the like
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMin = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0');
    ms -= sign * offsetMin * 60_000;
  }
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * An event time from a warehouse cell, in epoch ms: numbers follow Mixpanel's rule (below 1e11
 * is seconds), Dates and date-time strings are converted. undefined when it is not a time.
 */
export function warehouseTimeMs(value: unknown): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Date) return Number.isFinite(value.getTime()) && value.getTime() >= 0 ? value.getTime() : undefined;
  if (typeof value === 'bigint') return normalizeTime(Number(value));
  if (typeof value === 'number') return normalizeTime(value);
  if (typeof value === 'string') {
    const numeric = normalizeTime(value);
    if (numeric !== undefined) return numeric;
    const ms = parseDateTime(value);
    return ms !== undefined && ms >= 0 ? ms : undefined;
  }
  return undefined;
}

/**
 * A cell as a property value: bigints beyond 2^53 and Buffers become strings, Dates ISO strings,
 * non-finite numbers null. JSON values (pg json/jsonb) pass through.
 */
export function propertyValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
    case 'object':
      if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.toISOString() : null;
      if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
      return value;
    default:
      return String(value);
  }
}

/** An identifier cell (user id, device id, group id) as a string; undefined when null or empty. */
export function idValue(value: unknown): string | undefined {
  const v = propertyValue(value);
  if (v === null || v === undefined) return undefined;
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return s.length === 0 ? undefined : s;
}

export type JsonColumnOutcome = { ok: true; properties: Record<string, unknown> } | { ok: false; message: string };

/** A JSON property column: an object (or its JSON text) whose top-level keys become properties. */
export function jsonColumnProperties(column: string, value: unknown): JsonColumnOutcome {
  if (value === null || value === undefined || value === '') return { ok: true, properties: {} };
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      return { ok: false, message: `JSON column '${column}' does not hold valid JSON` };
    }
  } else if (value instanceof Uint8Array) {
    try {
      parsed = JSON.parse(Buffer.from(value).toString('utf8'));
    } catch {
      return { ok: false, message: `JSON column '${column}' does not hold valid JSON` };
    }
  }
  if (parsed === null) return { ok: true, properties: {} };
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ok: false, message: `JSON column '${column}' must hold a JSON object, not ${Array.isArray(parsed) ? 'an array' : typeof parsed}` };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    if (k === '__proto__' || v === undefined) continue;
    out[k] = v;
  }
  return { ok: true, properties: out };
}

/**
 * Orders two watermark values (insert-time column values) of the same source column: numbers
 * numerically; date-time strings by time (then text); anything else as text.
 */
export function compareWatermarks(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const sa = String(a);
  const sb = String(b);
  const ta = parseDateTime(sa);
  const tb = parseDateTime(sb);
  if (ta !== undefined && tb !== undefined && ta !== tb) return ta - tb;
  if (typeof a === 'number' || typeof b === 'number') {
    const na = Number(a);
    const nb = Number(b);
    if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return na - nb;
  }
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** A cell usable as a watermark (bound back into `column > ?`), or undefined for null/unusable. */
export function watermarkValue(value: unknown): string | number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return propertyValue(value) as string | number;
  if (typeof value === 'string') return value;
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.toISOString() : undefined;
  return undefined;
}

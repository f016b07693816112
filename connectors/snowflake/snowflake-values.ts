/**
 * Turns the values snowflake-sdk hands out into what the sync maps into events. The driver is asked
 * for NUMBER and semi-structured columns as raw strings (`fetchAsString`), because its own
 * conversions lose precision silently (NUMBER beyond 2^53 becomes a rounded Number) and parse
 * VARIANTs with an eval fallback. Here:
 * - integers (NUMBER scale 0) are Numbers while exact, strings beyond ±2^53-1;
 * - decimals and floats are Numbers (non-finite floats stay strings);
 * - VARIANT / OBJECT / ARRAY are parsed with JSON.parse (invalid JSON stays the raw string);
 * - TIMESTAMP_* and DATE become plain Dates (NTZ read as UTC), BINARY a hex string.
 */

export interface ColumnMeta {
  name: string;
  /** The result-metadata type, lower-case: fixed, real, text, boolean, date, time, timestamp_ntz, variant, … */
  type: string;
  scale: number;
}

export type ValueConverter = (value: unknown) => unknown;

/** Native types the driver must return as strings for the converters below. */
export const FETCH_AS_STRING = ['Number', 'JSON', 'Object', 'Array', 'Map'] as const;

export function integerValue(raw: string): number | string {
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : raw;
}

export function floatValue(raw: string): number | string {
  const n = Number(raw);
  return Number.isFinite(n) ? n : raw;
}

export function jsonValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function converterFor(col: ColumnMeta): ValueConverter {
  switch (col.type) {
    case 'fixed':
      return col.scale > 0 ? asString(floatValue) : asString(integerValue);
    case 'real':
      return asString(floatValue);
    case 'variant':
    case 'object':
    case 'array':
    case 'map':
      return asString(jsonValue);
    case 'date':
    case 'timestamp_ntz':
    case 'timestamp_ltz':
    case 'timestamp_tz':
      return (v) => (v instanceof Date ? new Date(v.getTime()) : v);
    case 'binary':
      return (v) => (Buffer.isBuffer(v) ? v.toString('hex').toUpperCase() : v);
    default:
      return (v) => v;
  }
}

function asString(fn: (raw: string) => unknown): ValueConverter {
  return (v) => (typeof v === 'string' ? fn(v) : v);
}

/** Builds a function from a driver row (array mode) to a `{column: value}` record. */
export function rowBuilder(columns: ColumnMeta[]): (values: unknown[]) => Record<string, unknown> {
  const converters = columns.map(converterFor);
  const names = columns.map((c) => c.name);
  return (values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const v = values[i];
      row[names[i]!] = v === null || v === undefined ? null : converters[i]!(v);
    }
    return row;
  };
}

/**
 * The type of a lookup-table CSV cell. CSV has only text, so each cell is typed on its own:
 *
 * | cell text                                   | stored as                          |
 * |---------------------------------------------|------------------------------------|
 * | empty                                       | absent (the property is left out)  |
 * | `true` / `false` (any case)                 | boolean                            |
 * | a JSON-style decimal number, e.g. `-3.5e2`  | number                             |
 * | an RFC 3339 date or date-time               | the string, exactly as written     |
 * | a JSON list, e.g. `["a","b"]` or `[1,2]`    | list                               |
 * | anything else                               | string, exactly as written         |
 *
 * Not numbers (kept as strings, because converting would lose information): leading zeros
 * (`007`, zip codes), integers beyond 2^53, `+1`, `.5`, `1,000`, `NaN`, `Infinity`, and
 * padded cells such as ` 42`. RFC 3339 times stay strings because JSON has no time type and
 * epoch numbers would be indistinguishable from ordinary numbers; Mixpanel reads ISO strings as
 * dates. Pure.
 */

export type CellType = 'absent' | 'boolean' | 'number' | 'datetime' | 'list' | 'string';

export interface TypedCell {
  type: CellType;
  /** undefined when absent. */
  value: unknown;
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const INTEGER = /^-?(0|[1-9]\d*)$/;
const RFC3339_DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
const RFC3339_DATE_TIME = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** An RFC 3339 full-date (`2024-05-01`) or date-time (`2024-05-01T12:00:00Z`, `…+02:00`). */
export function isRfc3339(text: string): boolean {
  if (RFC3339_DATE.test(text)) return Number.isFinite(Date.parse(`${text}T00:00:00Z`));
  return RFC3339_DATE_TIME.test(text) && Number.isFinite(Date.parse(text.replace(' ', 'T')));
}

function numberOf(text: string): number | undefined {
  if (!NUMBER.test(text)) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n)) return undefined;
  if (INTEGER.test(text) && !Number.isSafeInteger(n)) return undefined;
  return n;
}

function listOf(text: string): unknown[] | undefined {
  if (!text.startsWith('[') || !text.endsWith(']')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function typeCell(text: string): TypedCell {
  if (text === '') return { type: 'absent', value: undefined };
  const lower = text.toLowerCase();
  if (lower === 'true' || lower === 'false') return { type: 'boolean', value: lower === 'true' };
  const n = numberOf(text);
  if (n !== undefined) return { type: 'number', value: n };
  if (isRfc3339(text)) return { type: 'datetime', value: text };
  const list = listOf(text);
  if (list !== undefined) return { type: 'list', value: list };
  return { type: 'string', value: text };
}

/**
 * Ids as clients send them in paths and query strings. Projects, workspaces, warehouse sources
 * and imports, and lookup tables have PostgreSQL `integer` ids (`increments`): a larger number
 * names no row, and PostgreSQL refuses it as a parameter ("out of range", which was a 500), so
 * parsers and lookups treat it as unknown. Pure.
 */
export const MAX_ROW_ID = 2_147_483_647;

/** A positive integer written in plain digits; undefined for anything else. */
export function positiveIdOf(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** A positive integer that can name a row; undefined for anything else. */
export function rowIdOf(value: unknown): number | undefined {
  const n = positiveIdOf(value);
  return n !== undefined && n <= MAX_ROW_ID ? n : undefined;
}

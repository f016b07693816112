/**
 * The read-back form of a stored event — the shape /import accepts, so an export can be
 * re-imported unchanged — and its lookup-table enrichment. Pure.
 */
import { exportSeconds } from './time-buckets.js';

export interface ExportRecord {
  event: string;
  properties: Record<string, unknown>;
}

export interface StoredEventLike {
  event: string;
  distinctId: string;
  /** Epoch ms. */
  time: number;
  insertId: string;
  properties: Record<string, unknown>;
}

/** Sets an own property even for the key "__proto__" (plain assignment would set the prototype). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `{event, properties:{time (seconds), distinct_id, $insert_id, ...stored}}`. */
export function toExportRecord(e: StoredEventLike): ExportRecord {
  const properties: Record<string, unknown> = { time: exportSeconds(e.time), distinct_id: e.distinctId, $insert_id: e.insertId };
  for (const [k, v] of Object.entries(e.properties)) {
    // The key columns are authoritative; stored properties never carry them, but be sure.
    if (!Object.prototype.hasOwnProperty.call(properties, k)) setOwn(properties, k, v);
  }
  return { event: e.event, properties };
}

/** The lookup key an event property value selects: strings as is, numbers and booleans as text. */
export function lookupKeyOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'boolean') return String(value);
  return undefined;
}

/** One mapped lookup table with the rows needed for the events at hand. */
export interface LookupJoin {
  mappedProperty: string;
  rows: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
}

/**
 * Adds each joined row's columns as `<mapped property>.<column>` (e.g. `song_id.genre`). A stored
 * property of the same name wins: enrichment never overwrites what was imported.
 */
export function enrich(properties: Record<string, unknown>, joins: readonly LookupJoin[]): void {
  for (const join of joins) {
    const key = lookupKeyOf(properties[join.mappedProperty]);
    if (key === undefined) continue;
    const row = join.rows.get(key);
    if (!row) continue;
    for (const [column, value] of Object.entries(row)) {
      const name = `${join.mappedProperty}.${column}`;
      if (!Object.prototype.hasOwnProperty.call(properties, name)) setOwn(properties, name, value);
    }
  }
}

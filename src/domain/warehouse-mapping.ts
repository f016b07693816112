/**
 * Warehouse row → event / profile update / lookup row (Mixpanel's warehouse-connector mapping). Pure: every row
 * yields either a value or a rejection reason, never an exception.
 *
 * Events:
 * - event name: the fixed `event_name`, or the `event_column_name` cell;
 * - time: the `time_column_name` cell (seconds or ms by Mixpanel's rule, a date or a date-time; UTC when no zone);
 * - `$insert_id`: the `insert_id_column_name` cell when it fits Mixpanel's rule (≤ 36 of [A-Za-z0-9-]);
 *   a cell that does not fit is replaced by a hash of itself (stable across runs); no column or a
 *   null cell → deterministicInsertId(event name, user ID, time, internal user ID);
 * - `$user_id` ← `user_column_name`; `$device_id` ← `device_column_name`;
 * - distinct_id: the internal numeric user ID (`distinct_id_column_name`) when mapped and set;
 *   else the user ID (simplified ID merge: a known user's distinct_id is their user ID); else
 *   `$device:<device id>`; a row with none of the three is rejected. The write path then applies
 *   the simplified ID merge (identity.ts): a row with a user ID is that user's, so its stored
 *   distinct_id is the user ID even when an internal ID was mapped (kept as `distinct_id` only for
 *   rows without a user ID);
 * - JSON property columns: their top-level keys become properties (over plain columns of the same name);
 * - every other column becomes a property named after the column. Null cells are left out.
 */
import crypto from 'node:crypto';
import { deterministicInsertId, isValidInsertId } from './insert-id.js';
import { idValue, jsonColumnProperties, parseDateTime, propertyValue, warehouseTimeMs } from './warehouse-values.js';

export type WarehouseRow = Record<string, unknown>;

export type MapOutcome<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

export interface EventMapping {
  eventName?: string;
  eventColumn?: string;
  timeColumn: string;
  insertIdColumn?: string;
  userColumn?: string;
  distinctIdColumn?: string;
  deviceColumn?: string;
  jsonColumns: readonly string[];
}

/** An event record in /import's shape, ready for ingestEvents. */
export interface EventRecordOut {
  event: string;
  properties: Record<string, unknown>;
}

function badTime(column: string, raw: unknown): string {
  const shown = JSON.stringify(raw instanceof Date ? raw.toISOString() : String(raw)).slice(0, 60);
  const parsed = raw instanceof Date ? raw.getTime() : typeof raw === 'string' ? parseDateTime(raw) : typeof raw === 'number' ? raw : undefined;
  if (parsed !== undefined && parsed < 0) return `time column '${column}' holds ${shown}, before 1970-01-01`;
  return `time column '${column}' holds ${shown}, not a time`;
}

const reject = <T>(field: string, message: string): MapOutcome<T> => ({ ok: false, field, message });

/** Plain columns (not mapped to a role, not JSON) with non-null cells, then the JSON columns' keys. */
function otherProperties(
  row: WarehouseRow,
  mapped: ReadonlySet<string>,
  jsonColumns: readonly string[],
): MapOutcome<Record<string, unknown>> {
  const props: Record<string, unknown> = {};
  for (const key in row) {
    if (mapped.has(key) || key === '__proto__') continue;
    const v = propertyValue(row[key]);
    if (v !== null) props[key] = v;
  }
  for (const col of jsonColumns) {
    const flat = jsonColumnProperties(col, row[col]);
    if (!flat.ok) return reject(col, flat.message);
    Object.assign(props, flat.properties);
  }
  return { ok: true, value: props };
}

/**
 * The deterministic `$insert_id` of a warehouse event without one (fits the 36-char rule: 32 hex):
 * exactly deterministicInsertId([event name, user ID, time, internal user ID]), computed with a
 * one-shot hash because it runs once per row of a sync.
 */
export function warehouseInsertId(eventName: string, userId: string | undefined, timeMs: number, internalUserId: string | undefined): string {
  const text = `${JSON.stringify(eventName)}\u0000${JSON.stringify(userId ?? null)}\u0000${JSON.stringify(timeMs)}\u0000${JSON.stringify(internalUserId ?? null)}\u0000`;
  return crypto.hash('sha256', text, 'hex').slice(0, 32);
}

/** Columns an event mapping consumes (they do not also become properties). */
export function eventMappedColumns(m: EventMapping): Set<string> {
  return new Set(
    [m.eventColumn, m.timeColumn, m.insertIdColumn, m.userColumn, m.distinctIdColumn, m.deviceColumn, ...m.jsonColumns].filter(
      (c): c is string => c !== undefined,
    ),
  );
}

/** The `$insert_id` an insert-ID cell becomes: itself when valid, else a hash of it. */
export function insertIdOfCell(cell: string): string {
  return isValidInsertId(cell) ? cell : deterministicInsertId(['insert_id', cell]);
}

export function compileEventMapper(m: EventMapping): (row: WarehouseRow) => MapOutcome<EventRecordOut> {
  const mapped = eventMappedColumns(m);
  return (row) => {
    let event: string | undefined = m.eventName;
    if (m.eventColumn !== undefined) {
      const cell = idValue(row[m.eventColumn]);
      if (cell === undefined) return reject(m.eventColumn, `event name column '${m.eventColumn}' is null or empty`);
      event = cell;
    }
    if (event === undefined) return reject('event', 'no event name');
    const rawTime = row[m.timeColumn];
    if (rawTime === null || rawTime === undefined) return reject(m.timeColumn, `time column '${m.timeColumn}' is null`);
    const time = warehouseTimeMs(rawTime);
    if (time === undefined) return reject(m.timeColumn, badTime(m.timeColumn, rawTime));
    const userId = m.userColumn !== undefined ? idValue(row[m.userColumn]) : undefined;
    const internalId = m.distinctIdColumn !== undefined ? idValue(row[m.distinctIdColumn]) : undefined;
    const deviceId = m.deviceColumn !== undefined ? idValue(row[m.deviceColumn]) : undefined;
    const distinctId = internalId ?? userId ?? (deviceId !== undefined ? `$device:${deviceId}` : undefined);
    if (distinctId === undefined) {
      return reject('distinct_id', 'the row has no user ID, internal user ID or device ID');
    }
    let insertId: string | undefined;
    if (m.insertIdColumn !== undefined) {
      const cell = idValue(row[m.insertIdColumn]);
      if (cell !== undefined) insertId = insertIdOfCell(cell);
    }
    insertId ??= warehouseInsertId(event, userId, time, internalId);

    const others = otherProperties(row, mapped, m.jsonColumns);
    if (!others.ok) return others;
    const properties = others.value;
    // The write path reads a time below 1e11 as seconds (Mixpanel's rule); ms that small (before
    // 1973-03-03) are handed over as seconds so they keep their meaning.
    properties.time = time < 1e11 ? time / 1000 : time;
    properties.distinct_id = distinctId;
    properties.$insert_id = insertId;
    if (userId !== undefined) properties.$user_id = userId;
    if (deviceId !== undefined) properties.$device_id = deviceId;
    return { ok: true, value: { event, properties } };
  };
}

export interface ProfileMapping {
  /** people: the user ID column (→ `$distinct_id`); groups: the group ID column (→ `$group_id`). */
  idColumn: string;
  /** groups only: the fixed `$group_key`. */
  groupKey?: string;
  timeColumn: string;
  jsonColumns: readonly string[];
}

/** A Mixpanel engage/groups update: `{$distinct_id | $group_key+$group_id, $set, $time?}`. */
export type ProfileUpdateOut = Record<string, unknown> & { $set: Record<string, unknown> };

/**
 * A user or group table row → a `$set` update with `$time` = the row's time (latest wins).
 * The id and time columns are not properties; null cells are left out of `$set`.
 */
export function compileProfileMapper(m: ProfileMapping): (row: WarehouseRow) => MapOutcome<ProfileUpdateOut> {
  const mapped = new Set([m.idColumn, m.timeColumn, ...m.jsonColumns]);
  return (row) => {
    const id = idValue(row[m.idColumn]);
    if (id === undefined) return reject(m.idColumn, `ID column '${m.idColumn}' is null or empty`);
    const others = otherProperties(row, mapped, m.jsonColumns);
    if (!others.ok) return others;
    const update: ProfileUpdateOut =
      m.groupKey !== undefined ? { $group_key: m.groupKey, $group_id: id, $set: others.value } : { $distinct_id: id, $set: others.value };
    const rawTime = row[m.timeColumn];
    if (rawTime !== null && rawTime !== undefined) {
      const time = warehouseTimeMs(rawTime);
      if (time === undefined) return reject(m.timeColumn, badTime(m.timeColumn, rawTime));
      update.$time = time;
    }
    return { ok: true, value: update };
  };
}

/** One CSV field (RFC 4180): quoted when it holds a quote, comma or line break. */
export function csvField(value: unknown): string {
  const v = propertyValue(value);
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) || /^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Lookup table rows → CSV lines, key column first. Rows with a null key are rejected. */
export function compileLookupMapper(keyColumn: string, columns: readonly string[]) {
  const others = columns.filter((c) => c !== keyColumn);
  return {
    header: [keyColumn, ...others].map(csvField).join(','),
    line: (row: WarehouseRow): MapOutcome<string> => {
      if (idValue(row[keyColumn]) === undefined) return reject(keyColumn, `key column '${keyColumn}' is null or empty`);
      return { ok: true, value: [keyColumn, ...others].map((c) => csvField(row[c])).join(',') };
    },
  };
}

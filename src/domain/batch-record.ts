/**
 * Turns one unit of an uploaded file into the record the write path takes. Pure.
 *
 * JSON and NDJSON units are the records as sent: events `{event, properties}`, people
 * `{$distinct_id, $set…}`, groups `{$group_key, $group_id, $set…}` — the /import, /engage and
 * /groups shapes. CSV has a header row; each data row becomes:
 *
 * - events: the `event` column is the event name; every other column is a property (so `time`,
 *   `distinct_id` and `$insert_id` columns land where /import expects them; an RFC 3339 `time`
 *   becomes epoch milliseconds);
 * - people: `$distinct_id` (or `distinct_id`) names the profile, every other column is `$set`;
 * - groups: `$group_key` and `$group_id` (or `group_key`, `group_id`) name it, the rest is `$set`.
 *
 * Cells are typed like lookup-table CSVs (src/domain/csv-typing.ts: numbers, booleans, lists,
 * empty = absent); identifier columns stay text.
 */
import type { BatchType } from './batch-format.js';
import { isRfc3339, typeCell } from './csv-typing.js';

export type UnitOutcome = { ok: true; record: unknown } | { ok: false; message: string };

/** A JSON/NDJSON unit: parse errors become a rejection of that one record. */
export function recordFromJson(unit: Buffer): UnitOutcome {
  try {
    return { ok: true, record: JSON.parse(unit.toString('utf8')) };
  } catch (err) {
    return { ok: false, message: `not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const ID_COLUMNS: Record<BatchType, readonly string[]> = {
  events: ['event', 'distinct_id', '$insert_id'],
  people: ['$distinct_id', 'distinct_id'],
  groups: ['$group_key', '$group_id', 'group_key', 'group_id'],
};

/** The columns a CSV of this type must have (one of each group). */
export function missingCsvColumns(type: BatchType, header: readonly string[]): string[] {
  const has = (...names: string[]) => names.some((n) => header.includes(n));
  const missing: string[] = [];
  if (type === 'events') {
    if (!has('event')) missing.push('event');
    if (!has('time')) missing.push('time');
    if (!has('distinct_id')) missing.push('distinct_id');
  } else if (type === 'people') {
    if (!has('$distinct_id', 'distinct_id')) missing.push('$distinct_id');
  } else {
    if (!has('$group_key', 'group_key')) missing.push('$group_key');
    if (!has('$group_id', 'group_id')) missing.push('$group_id');
  }
  return missing;
}

export function recordFromCsv(type: BatchType, header: readonly string[], row: readonly string[]): UnitOutcome {
  if (row.length !== header.length) {
    return { ok: false, message: `row has ${row.length} columns, the header has ${header.length}` };
  }
  const ids = ID_COLUMNS[type];
  // Null prototype: a CSV column named "__proto__" is data, not this object's prototype.
  const values = Object.create(null) as Record<string, unknown>;
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!;
    const text = row[i]!;
    if (ids.includes(name)) {
      if (text !== '') values[name] = text;
      continue;
    }
    const cell = typeCell(text);
    if (cell.type !== 'absent') values[name] = cell.value;
  }
  if (type === 'events') {
    const { event, ...properties } = values;
    // CSV exports often carry ISO times; /import wants epoch seconds or milliseconds.
    if (typeof properties.time === 'string' && isRfc3339(properties.time)) properties.time = Date.parse(properties.time.replace(' ', 'T'));
    return { ok: true, record: { event, properties } };
  }
  if (type === 'people') {
    const { $distinct_id, distinct_id, ...set } = values;
    return { ok: true, record: { $distinct_id: $distinct_id ?? distinct_id, $set: set } };
  }
  const { $group_key, $group_id, group_key, group_id, ...set } = values;
  return { ok: true, record: { $group_key: $group_key ?? group_key, $group_id: $group_id ?? group_id, $set: set } };
}

/**
 * Stored rows of the ClickHouse `events` table, built from the store's EventRows, and the
 * write versions that order them. Pure except for the version clock.
 */
import type { Utf8Chunks } from '../../lib/utf8-chunks.js';
import type { EventRows, RowEncoder } from '../event-rows.js';
import { propertyColumns } from './clickhouse-properties.js';

export interface EventKey {
  event: string;
  distinctId: string;
  time: number;
  insertId: string;
}

/** The dedupe key as one string (for Sets): NUL never occurs in JSON-valid text we accept. */
export function keyString(k: EventKey): string {
  return `${k.event}\u0000${k.distinctId}\u0000${k.time}\u0000${k.insertId}`;
}

export function keyOfRow(rows: EventRows, i: number): EventKey {
  return { event: rows.event[i]!, distinctId: rows.distinctId[i]!, time: rows.time[i]!, insertId: rows.insertId[i]! };
}

/**
 * Write versions: microseconds since the epoch, strictly increasing within this process. A
 * newer write of a key (update, delete marker, re-insert after a delete) gets a larger version
 * than every earlier one, which is what ReplacingMergeTree and argMax keep.
 */
export class VersionClock {
  private last = 0;

  /** `count` consecutive versions; returns the first. */
  take(count = 1): number {
    const now = Date.now() * 1000;
    const first = Math.max(now, this.last + 1);
    this.last = first + count - 1;
    return first;
  }
}

export interface RowMeta {
  projectId: number;
  source: string;
  now: number;
  ver: number;
  isNew: boolean;
}

/**
 * The JSONEachRow fields of one event that depend on the event alone, from `"event"` to the
 * closing brace (typed property arrays included). Built once per event, where the properties are
 * objects: the /import worker passes it in EventRows.encoded (the RowEncoder below); other write
 * paths get it from eventFieldsOf.
 */
export function eventFieldsJson(
  event: string,
  distinctId: string,
  time: number,
  insertId: string,
  deviceId: string | null | undefined,
  propertiesText: string,
  properties: Readonly<Record<string, unknown>>,
): string {
  const columns = JSON.stringify(propertyColumns(properties));
  return (
    `"event":${JSON.stringify(event)},"distinct_id":${JSON.stringify(distinctId)},"time":${time},"insert_id":${JSON.stringify(insertId)},` +
    `"device_id":${JSON.stringify(deviceId ?? '')},"properties":${JSON.stringify(propertiesText)},${columns.slice(1)}`
  );
}

export const encodeClickHouseRow: RowEncoder = (e, propertiesText) =>
  eventFieldsJson(e.event, e.distinctId, e.time, e.insertId, e.deviceId, propertiesText, e.properties);

/** Row `i`'s event fields: pre-encoded when the rows carry them, else derived from its columns. */
export function eventFieldsOf(rows: EventRows, i: number): string {
  const done = rows.encoded?.[i];
  if (done !== undefined) return done;
  const text = rows.properties[i]!;
  return eventFieldsJson(rows.event[i]!, rows.distinctId[i]!, rows.time[i]!, rows.insertId[i]!, rows.deviceId?.[i], text, JSON.parse(text) as Record<string, unknown>);
}

/** The fields one write stamps on every row it inserts, from `{` to the comma before `"event"`. */
export function rowHead(meta: RowMeta): string {
  return (
    `{"project_id":${meta.projectId},"ver":${meta.ver},"seq":${meta.ver},"is_deleted":0,"is_new":${meta.isNew ? 1 : 0},` +
    `"source":${JSON.stringify(meta.source)},"ingested_at":${meta.now},`
  );
}

const NEWLINE = 10;

/** Appends row `i` as a JSONEachRow line stamped with `head` (rowHead) to an INSERT body, without building the line. */
export function writeEventLine(body: Utf8Chunks, head: string, rows: EventRows, i: number): void {
  body.write(head);
  body.write(eventFieldsOf(rows, i), NEWLINE);
}

/** One `events` row as a JSONEachRow line. */
export function eventLine(rows: EventRows, i: number, meta: RowMeta): string {
  return `${rowHead(meta)}${eventFieldsOf(rows, i)}\n`;
}

/** A delete marker for a stored key (a JSONEachRow line): newest version, no properties, filtered out by every read. */
export function deleteMarker(projectId: number, key: EventKey, ver: number, now: number): string {
  const marker = {
    project_id: projectId,
    event: key.event,
    distinct_id: key.distinctId,
    time: key.time,
    insert_id: key.insertId,
    device_id: '',
    ver,
    is_deleted: 1,
    is_new: 0,
    seq: ver,
    source: '',
    ingested_at: now,
    properties: '{}',
  };
  return `${JSON.stringify(marker)}\n`;
}

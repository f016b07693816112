/**
 * Stored rows of the ClickHouse `events` table as RowBinary, built from the store's EventRows,
 * and the write versions that order them. Pure except for the version clock.
 */
import { Utf8Chunks } from '../../lib/utf8-chunks.js';
import type { EventRows, RowEncoder } from '../event-rows.js';
import { writePropertyColumns } from './clickhouse-properties.js';
import { RowBinaryWriter } from './row-binary-writer.js';

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

/** The columns one write stamps on every row (rowHead), then those of the event itself (eventFields). */
const HEAD_COLUMNS = ['project_id', 'ver', 'seq', 'is_deleted', 'is_new', 'source', 'ingested_at'];
const EVENT_COLUMNS = ['event', 'distinct_id', 'time', 'insert_id', 'device_id', 'properties'];
const PROPERTY_COLUMNS = ['prop_keys', 'prop_types', 'prop_nums', 'prop_strs', 'prop_canon', 'prop_elem_types', 'prop_elem_nums', 'prop_elem_strs', 'prop_elem_canon'];

/** The column list of every `events` INSERT, in the order the bytes below are written. */
export const INSERT_COLUMNS: readonly string[] = [...HEAD_COLUMNS, ...EVENT_COLUMNS, ...PROPERTY_COLUMNS];

/** The RowBinary fields of one event that depend on the event alone, from `event` to `prop_elem_canon`. */
export function writeEventFields(
  w: RowBinaryWriter,
  event: string,
  distinctId: string,
  time: number,
  insertId: string,
  deviceId: string | null | undefined,
  propertiesText: string,
  properties: Readonly<Record<string, unknown>>,
): void {
  w.string(event);
  w.string(distinctId);
  w.i64(time);
  w.string(insertId);
  w.string(deviceId ?? '');
  w.string(propertiesText);
  writePropertyColumns(w, properties);
}

/**
 * The encoder the /import worker fills EventRows.encoded with, where the properties are still
 * objects (one per batch: its rows share the writer's chunks). Other write paths get the same
 * bytes from eventFieldsOf.
 */
export function clickHouseRowEncoder(): RowEncoder {
  const w = new RowBinaryWriter();
  return (e, propertiesText) => {
    writeEventFields(w, e.event, e.distinctId, e.time, e.insertId, e.deviceId, propertiesText, e.properties);
    return w.endRow();
  };
}

/** Row `i`'s event fields: pre-encoded when the rows carry them, else derived from its columns into `w`. */
export function eventFieldsOf(rows: EventRows, i: number, w: RowBinaryWriter): Uint8Array {
  const done = rows.encoded?.[i];
  if (done !== undefined) return done;
  const text = rows.properties[i]!;
  writeEventFields(w, rows.event[i]!, rows.distinctId[i]!, rows.time[i]!, rows.insertId[i]!, rows.deviceId?.[i], text, JSON.parse(text) as Record<string, unknown>);
  return w.endRow();
}

function writeHead(w: RowBinaryWriter, meta: RowMeta, isDeleted: 0 | 1): void {
  w.u64(meta.projectId);
  w.u64(meta.ver);
  w.u64(meta.ver);
  w.u8(isDeleted);
  w.u8(meta.isNew ? 1 : 0);
  w.string(meta.source);
  w.i64(meta.now);
}

/** The fields one write stamps on every row it inserts, from `project_id` to `ingested_at`. */
export function rowHead(meta: RowMeta, w = new RowBinaryWriter(64)): Uint8Array {
  writeHead(w, meta, 0);
  return w.endRow();
}

/**
 * The INSERT body of one write: rows framed by their head, encoded on demand for rows that
 * arrive without their bytes.
 */
export class EventsBody {
  readonly chunks = new Utf8Chunks();
  private readonly scratch = new RowBinaryWriter(64 * 1024);

  /** Appends row `i` stamped with `head` (rowHead). */
  event(head: Uint8Array, rows: EventRows, i: number): void {
    this.chunks.bytes(head);
    this.chunks.bytes(eventFieldsOf(rows, i, this.scratch));
    this.scratch.rewind();
  }

  /** A delete marker for a stored key: newest version, no properties, filtered out by every read. */
  deleteMarker(projectId: number, key: EventKey, ver: number, now: number): void {
    const w = this.scratch;
    writeHead(w, { projectId, ver, now, source: '', isNew: false }, 1);
    writeEventFields(w, key.event, key.distinctId, key.time, key.insertId, '', '{}', {});
    this.chunks.bytes(w.endRow());
    w.rewind();
  }
}

/** All of `rows` stamped with one head (`meta`): the body of a bulk load. */
export function eventsBodyOf(rows: EventRows, meta: RowMeta): EventsBody {
  const body = new EventsBody();
  const head = rowHead(meta);
  for (let i = 0; i < rows.event.length; i++) body.event(head, rows, i);
  return body;
}

/**
 * Stored rows of the ClickHouse `events` table, built from the store's EventRows, and the
 * write versions that order them. Pure except for the version clock.
 */
import type { EventRows } from '../event-store.js';
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

/** One `events` row (JSONEachRow object) for row `i` of the batch. */
export function eventRow(rows: EventRows, i: number, meta: RowMeta): Record<string, unknown> {
  const text = rows.properties[i]!;
  return {
    project_id: meta.projectId,
    event: rows.event[i],
    distinct_id: rows.distinctId[i],
    time: rows.time[i],
    insert_id: rows.insertId[i],
    device_id: rows.deviceId?.[i] ?? '',
    ver: meta.ver,
    is_deleted: 0,
    is_new: meta.isNew ? 1 : 0,
    seq: meta.ver,
    source: meta.source,
    ingested_at: meta.now,
    properties: text,
    ...propertyColumns(JSON.parse(text) as Record<string, unknown>),
  };
}

/** A delete marker for a stored key: newest version, no properties, filtered out by every read. */
export function deleteMarker(projectId: number, key: EventKey, ver: number, now: number): Record<string, unknown> {
  return {
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
}

/**
 * Events as columns with properties already serialised: the form every store's insert consumes.
 * Built off the writer's thread where possible (ingest/events-prepare.ts, the migration decoder,
 * the warehouse reader thread), so it must stay plain data (structured-clone friendly).
 */
import type { NormalizedEvent } from '../domain/event-record.js';

/** A device → user link (CONTRACT §2.6; see event-store.ts). */
export interface IdentityLink {
  deviceId: string;
  userId: string;
}

export interface EventRows {
  event: string[];
  distinctId: string[];
  /** Epoch milliseconds. */
  time: number[];
  insertId: string[];
  /** JSON text of each event's properties. */
  properties: string[];
  /** The device each anonymous event was done on (resolution at read time), else null. */
  deviceId: (string | null)[];
  /** Links the events carry, in event order (the store keeps the first per device). */
  links: IdentityLink[];
  /**
   * Per event, the store's own encoding of it (RowEncoder), made where the properties are still
   * objects — on the /import worker — so the writer's thread only frames it. Absent: the store
   * derives it from the columns above.
   */
  encoded?: Uint8Array[];
}

/**
 * A store's encoding of one event (e.g. ClickHouse's RowBinary fields, see clickhouse-rows.ts).
 * One encoder per batch: the bytes it returns may share its buffers.
 */
export type RowEncoder = (event: NormalizedEvent, propertiesText: string) => Uint8Array;

export function emptyEventRows(): EventRows {
  return { event: [], distinctId: [], time: [], insertId: [], properties: [], deviceId: [], links: [] };
}

/**
 * EventRows as posted between threads: the links as two arrays of strings, which structured
 * clone copies ~4x faster than as many small objects (an /import batch of identified events
 * carries one link per event).
 */
export interface PostedEventRows extends Omit<EventRows, 'links'> {
  linkDevices: string[];
  linkUsers: string[];
}

export function toPostedRows(rows: EventRows): PostedEventRows {
  const { links, ...columns } = rows;
  return { ...columns, linkDevices: links.map((l) => l.deviceId), linkUsers: links.map((l) => l.userId) };
}

export function fromPostedRows(posted: PostedEventRows): EventRows {
  const { linkDevices, linkUsers, ...columns } = posted;
  return { ...columns, links: linkDevices.map((deviceId, i) => ({ deviceId, userId: linkUsers[i]! })) };
}

/** Consecutive row sets as one, in order; of each device's links only the first is kept, as toEventRows does. */
export function concatEventRows(parts: readonly EventRows[]): EventRows {
  if (parts.length === 1) return parts[0]!;
  const out = emptyEventRows();
  // Encodings are kept only when every part has them; otherwise the store derives them.
  if (parts.every((p) => p.encoded)) out.encoded = parts.flatMap((p) => p.encoded!);
  const linked = new Set<string>();
  for (const p of parts) {
    for (let i = 0; i < p.event.length; i++) {
      out.event.push(p.event[i]!);
      out.distinctId.push(p.distinctId[i]!);
      out.time.push(p.time[i]!);
      out.insertId.push(p.insertId[i]!);
      out.properties.push(p.properties[i]!);
      out.deviceId.push(p.deviceId[i]!);
    }
    for (const l of p.links) {
      if (linked.has(l.deviceId)) continue;
      linked.add(l.deviceId);
      out.links.push(l);
    }
  }
  return out;
}

/** The rows at `indices` (in that order); the links travel whole (a link is written once, first wins). */
export function selectEventRows(rows: EventRows, indices: readonly number[]): EventRows {
  const pick = <T>(col: T[]) => indices.map((i) => col[i]!);
  return {
    event: pick(rows.event),
    distinctId: pick(rows.distinctId),
    time: pick(rows.time),
    insertId: pick(rows.insertId),
    properties: pick(rows.properties),
    deviceId: pick(rows.deviceId),
    links: rows.links,
    ...(rows.encoded ? { encoded: pick(rows.encoded) } : {}),
  };
}

export function toEventRows(events: readonly NormalizedEvent[], encode?: RowEncoder): EventRows {
  const n = events.length;
  const rows: EventRows = {
    event: new Array(n),
    distinctId: new Array(n),
    time: new Array(n),
    insertId: new Array(n),
    properties: new Array(n),
    deviceId: new Array(n),
    links: [],
  };
  if (encode) rows.encoded = new Array(n);
  const linked = new Set<string>();
  for (let i = 0; i < n; i++) {
    const e = events[i]!;
    rows.event[i] = e.event;
    rows.distinctId[i] = e.distinctId;
    rows.time[i] = e.time;
    rows.insertId[i] = e.insertId;
    rows.properties[i] = JSON.stringify(e.properties);
    if (rows.encoded) rows.encoded[i] = encode!(e, rows.properties[i]!);
    // The write path's ID merge rules (domain/identity.ts) decided these per the project's mode.
    rows.deviceId[i] = e.deviceId ?? null;
    // Only a device's first link in the batch can win; later ones would be written just to be ignored.
    if (e.link && !linked.has(e.link.deviceId)) {
      linked.add(e.link.deviceId);
      rows.links.push(e.link);
    }
  }
  return rows;
}

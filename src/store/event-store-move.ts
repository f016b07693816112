/**
 * Copies one project's events (and the device → user links they carry) from one event store to
 * another — e.g. from the embedded SQLite to ClickHouse — then verifies that the destination
 * holds as many events of the project as the source. Written against the EventStore interface
 * only, so every pair of stores works. Idempotent: the destination deduplicates, so an
 * interrupted move is finished by running it again.
 */
import { resolveEventIdentity, type IdMerge } from '../domain/identity.js';
import { emptyEventRows, type EventRows } from './event-rows.js';
import type { EventStore, StoredEvent } from './event-store.js';

/** Usage in the destination counts moved events under this source, apart from real ingestion. */
export const MOVE_SOURCE = 'store-move';

export interface MoveResult {
  project_id: number;
  /** Events read from the source. */
  read: number;
  /** Events the destination did not have yet. */
  written: number;
  source_count: number;
  destination_count: number;
  /** The destination holds exactly the source's count. */
  verified: boolean;
}

function rowsOf(events: readonly StoredEvent[], idMerge: IdMerge): EventRows {
  const rows = emptyEventRows();
  for (const e of events) {
    rows.event.push(e.event);
    rows.distinctId.push(e.distinctId);
    rows.time.push(e.time);
    rows.insertId.push(e.insertId);
    rows.properties.push(JSON.stringify(e.properties));
    // The write path's ID merge rules, applied again to what was stored, give back the device
    // and link the event was stored with (the stored distinct_id is already their output).
    const outcome = resolveEventIdentity(idMerge, e.distinctId, e.properties);
    const identity = outcome.ok ? outcome.identity : { distinctId: e.distinctId };
    rows.deviceId.push(identity.deviceId ?? null);
    if (identity.link) rows.links.push(identity.link);
  }
  return rows;
}

export async function moveProjectEvents(
  from: EventStore,
  to: EventStore,
  projectId: number,
  /** The project's ID merge system (accounts): which rules derived its devices and links. */
  idMerge: IdMerge,
  options: { pageSize?: number; now?: () => number; onProgress?: (read: number) => void } = {},
): Promise<MoveResult> {
  const now = options.now ?? Date.now;
  let read = 0;
  let written = 0;
  for await (const page of from.scan({ projectId, fromMs: Number.MIN_SAFE_INTEGER, toMs: Number.MAX_SAFE_INTEGER, pageSize: options.pageSize ?? 5000 })) {
    written += await to.writeBatch({ projectId, source: MOVE_SOURCE, rows: rowsOf(page, idMerge), now: now() });
    read += page.length;
    options.onProgress?.(read);
  }
  const [sourceCount, destinationCount] = await Promise.all([from.count(projectId), to.count(projectId)]);
  return { project_id: projectId, read, written, source_count: sourceCount, destination_count: destinationCount, verified: sourceCount === destinationCount && read === sourceCount };
}

/**
 * The single write path for events. /import, /track, warehouse syncs, migrations and batch
 * imports all end here, so validation, dedupe, stamping and usage counting behave the same
 * everywhere. A batch commits in one transaction: a 200 or a checkpoint means it is durable.
 */
import {
  DEFAULT_EVENT_LIMITS,
  validateEventRecord,
  type EventLimits,
  type NormalizedEvent,
  type RecordRejection,
} from '../domain/event-record.js';
import type { Knex } from 'knex';
import type { IdMerge } from '../domain/identity.js';
import { toEventRows, type EventRows } from '../store/event-rows.js';
import type { EventStore } from '../store/event-store.js';
import { eventsIngested } from '../lib/metrics.js';

export type IngestSource = 'import' | 'track' | 'warehouse-import' | 'migration' | 'batch-import';

export interface ValidateOptions {
  strict?: boolean;
  /** Refuse events older than this (the /track window). */
  maxAgeMs?: number;
  limits?: EventLimits;
  now?: number;
  /** Properties set on every valid event after its insert id is fixed (never part of the id). */
  stamp?: Record<string, unknown>;
  /** The project's ID merge system (domain/identity.ts); absent: simplified, the default. */
  idMerge?: IdMerge;
}

export interface ValidatedBatch {
  events: NormalizedEvent[];
  rejected: RecordRejection[];
}

/** Pure half of the write path: can run on any thread. */
export function validateEvents(records: readonly unknown[], options: ValidateOptions = {}): ValidatedBatch {
  const rules = {
    ...(options.limits ?? DEFAULT_EVENT_LIMITS),
    strictTime: options.strict ?? false,
    maxAgeMs: options.maxAgeMs,
    now: options.now ?? Date.now(),
    idMerge: options.idMerge,
  };
  const events: NormalizedEvent[] = [];
  const rejected: RecordRejection[] = [];
  for (let i = 0; i < records.length; i++) {
    const outcome = validateEventRecord(records[i], i, rules);
    if (outcome.ok) {
      if (options.stamp) Object.assign(outcome.event.properties, options.stamp);
      events.push(outcome.event);
    } else rejected.push(outcome.reject);
  }
  return { events, rejected };
}

export interface StoreResult {
  imported: number;
  deduplicated: number;
}

/** IO half: stores validated events in one transaction (or the caller's, see storeEventRows). */
export async function storeEvents(
  store: EventStore,
  projectId: number,
  source: IngestSource,
  events: readonly NormalizedEvent[],
  now = Date.now(),
  within?: Knex.Transaction,
): Promise<StoreResult> {
  return storeEventRows(store, projectId, source, toEventRows(events), now, within);
}

/**
 * Stores rows prepared off the writer's thread (events-prepare.ts) — validated events with their
 * properties already serialised — through the event store, which counts usage and commits the
 * identity links with them. `within`: a DATABASE_URL transaction the write joins where the store
 * lives in that database (a run's checkpoint commits with its events; see WriteOptions).
 */
export async function storeEventRows(
  store: EventStore,
  projectId: number,
  source: IngestSource,
  rows: EventRows,
  now = Date.now(),
  within?: Knex.Transaction,
): Promise<StoreResult> {
  const imported = await store.writeBatch({ projectId, source, rows, now }, { within });
  eventsIngested.inc({ source }, imported);
  return { imported, deduplicated: rows.event.length - imported };
}

export interface IngestResult extends StoreResult {
  received: number;
  rejected: RecordRejection[];
}

export async function ingestEvents(
  store: EventStore,
  projectId: number,
  source: IngestSource,
  records: readonly unknown[],
  options: ValidateOptions & { within?: Knex.Transaction } = {},
): Promise<IngestResult> {
  const { events, rejected } = validateEvents(records, options);
  const stored = await storeEvents(store, projectId, source, events, options.now, options.within);
  return { received: records.length, rejected, ...stored };
}

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
import { insertEventRows, toEventRows, type EventRows } from '../db/events.repo.js';
import { addUsage } from '../db/usage.repo.js';
import { dialect, type Db, type DbOrTrx } from '../db/knex.js';
import { sqliteWriteCombiner } from './sqlite-write-combiner.js';
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

/** IO half: stores validated events in one transaction (or the caller's). */
export async function storeEvents(
  db: DbOrTrx,
  projectId: number,
  source: IngestSource,
  events: readonly NormalizedEvent[],
  now = Date.now(),
): Promise<StoreResult> {
  return storeEventRows(db, projectId, source, toEventRows(events), now);
}

/**
 * Stores rows prepared off the writer's thread (events-prepare.ts) — validated events with their
 * properties already serialised — in one transaction (or the caller's), counting usage. On
 * SQLite, batches arriving together share a commit (sqlite-write-combiner.ts); each call still
 * returns only after its rows are committed.
 */
export async function storeEventRows(
  db: DbOrTrx,
  projectId: number,
  source: IngestSource,
  rows: EventRows,
  now = Date.now(),
): Promise<StoreResult> {
  const run = async (trx: DbOrTrx) => {
    const imported = await insertEventRows(trx, projectId, source, rows, now);
    await addUsage(trx, projectId, source, imported, now);
    return imported;
  };
  let imported: number;
  if ('isTransaction' in db && db.isTransaction) imported = await run(db);
  else if (dialect(db) === 'sqlite') imported = await sqliteWriteCombiner(db as Db).store(projectId, source, rows, now);
  else imported = await (db as Db).transaction(run);
  eventsIngested.inc({ source }, imported);
  return { imported, deduplicated: rows.event.length - imported };
}

export interface IngestResult extends StoreResult {
  received: number;
  rejected: RecordRejection[];
}

export async function ingestEvents(
  db: DbOrTrx,
  projectId: number,
  source: IngestSource,
  records: readonly unknown[],
  options: ValidateOptions = {},
): Promise<IngestResult> {
  const { events, rejected } = validateEvents(records, options);
  const stored = await storeEvents(db, projectId, source, events, options.now);
  return { received: records.length, rejected, ...stored };
}

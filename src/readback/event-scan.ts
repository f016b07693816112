/**
 * The one scan behind export and insights: pages of stored events in time order, turned into
 * their read-back form, enriched from mapped lookup tables and filtered by `where`. An async
 * generator, so the consumer pulls the next page only when it has dealt with the last one —
 * that is what keeps an export's memory flat under a slow client.
 */
import client from 'prom-client';
import { pageEventsByTime, type ScanPosition } from '../db/event-scan.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import { lookupRowsByKeys, mappedLookupTables } from '../db/lookup-read.repo.js';
import { enrich, lookupKeyOf, toExportRecord, type ExportRecord, type LookupJoin } from '../domain/export-record.js';
import type { Predicate } from '../domain/where-evaluate.js';
import { registry } from '../lib/metrics.js';

export const readbackEventsRead = new client.Counter({
  name: 'readback_events_read_total',
  help: 'Stored events read by the read-back APIs, by purpose (export, insights)',
  labelNames: ['purpose'] as const,
  registers: [registry],
});

export const DEFAULT_SCAN_PAGE = 2000;

export interface ScanOptions {
  projectId: number;
  fromMs: number;
  toMs: number;
  events?: readonly string[];
  where?: Predicate;
  /** Stop after this many matching events. */
  limit?: number;
  pageSize?: number;
  purpose: 'export' | 'insights';
  /** Stops the scan between pages (client gone). */
  signal?: AbortSignal;
}

export interface ScannedEvent {
  /** Epoch ms, as stored. */
  timeMs: number;
  record: ExportRecord;
}

/** Joins for one page: for each mapped table, the rows keyed by the values on these records. */
async function joinsFor(
  db: DbOrTrx,
  tables: readonly { id: number; mappedProperty: string }[],
  records: readonly ExportRecord[],
): Promise<LookupJoin[]> {
  const joins: LookupJoin[] = [];
  for (const t of tables) {
    const keys = new Set<string>();
    for (const r of records) {
      const key = lookupKeyOf(r.properties[t.mappedProperty]);
      if (key !== undefined) keys.add(key);
    }
    if (keys.size === 0) continue;
    joins.push({ mappedProperty: t.mappedProperty, rows: await lookupRowsByKeys(db, t.id, [...keys]) });
  }
  return joins;
}

export async function* scanEvents(db: DbOrTrx, opts: ScanOptions): AsyncGenerator<ScannedEvent[]> {
  const pageSize = opts.pageSize ?? DEFAULT_SCAN_PAGE;
  const tables = await mappedLookupTables(db, opts.projectId);
  let remaining = opts.limit ?? Infinity;
  let after: ScanPosition | undefined;
  while (remaining > 0 && !opts.signal?.aborted) {
    // Without a filter the page never needs to be bigger than what is left to send.
    const size = opts.where ? pageSize : Math.min(pageSize, remaining);
    const rows = await pageEventsByTime(
      db,
      { projectId: opts.projectId, fromMs: opts.fromMs, toMs: opts.toMs, events: opts.events, limit: size },
      after,
    );
    readbackEventsRead.inc({ purpose: opts.purpose }, rows.length);
    if (rows.length === 0) return;
    const last = rows[rows.length - 1]!;
    after = { time: last.time, id: last.id };

    const scanned = rows.map((e) => ({ timeMs: e.time, record: toExportRecord(e) }));
    if (tables.length > 0) {
      const joins = await joinsFor(
        db,
        tables,
        scanned.map((s) => s.record),
      );
      for (const s of scanned) enrich(s.record.properties, joins);
    }
    let out = opts.where ? scanned.filter((s) => opts.where!(s.record.properties)) : scanned;
    if (out.length > remaining) out = out.slice(0, remaining);
    remaining -= out.length;
    if (out.length > 0) yield out;
    if (rows.length < size) return;
  }
}

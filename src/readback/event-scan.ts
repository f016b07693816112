/**
 * The one scan behind export (and the insights fallback): pages of stored events in time order
 * from the event store, turned into their read-back form, enriched from mapped lookup tables and
 * filtered by `where`. The filter goes into the store's query whenever it can (where-plan.ts);
 * only an expression the store cannot take, or one reading a lookup-table column, is evaluated
 * here. An async generator, so the consumer pulls the next page only when it has dealt with the
 * last one — that is what keeps an export's memory flat under a slow client.
 */
import client from 'prom-client';
import type { DbOrTrx } from '../db/knex.js';
import { lookupRowsByKeys, mappedLookupTables } from '../db/lookup-read.repo.js';
import { enrich, lookupKeyOf, toExportRecord, type ExportRecord, type LookupJoin } from '../domain/export-record.js';
import { evaluate, truthy } from '../domain/where-evaluate.js';
import type { Expr } from '../domain/where-expression.js';
import { registry } from '../lib/metrics.js';
import type { EventStore } from '../store/event-store.js';
import { canPushDown, propertyNames } from '../store/where-plan.js';

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
  where?: Expr;
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
  /** The event's resolved id (identity links, event-store.ts). */
  resolvedId: string;
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

/** Whether the expressions read a column a mapped lookup table adds (`<mapped property>.<column>`). */
export function readsLookupColumns(tables: readonly { mappedProperty: string }[], ...exprs: (Expr | undefined)[]): boolean {
  if (tables.length === 0) return false;
  for (const e of exprs) {
    if (!e) continue;
    for (const name of propertyNames(e)) if (tables.some((t) => name.startsWith(`${t.mappedProperty}.`))) return true;
  }
  return false;
}

/** Lookup tables mapped in the project (read once per request). */
export function lookupTablesOf(db: DbOrTrx, projectId: number) {
  return mappedLookupTables(db, projectId);
}

export async function* scanEvents(db: DbOrTrx, store: EventStore, opts: ScanOptions): AsyncGenerator<ScannedEvent[]> {
  const pageSize = opts.pageSize ?? DEFAULT_SCAN_PAGE;
  const tables = await mappedLookupTables(db, opts.projectId);
  const pushed = opts.where !== undefined && canPushDown(opts.where) && !readsLookupColumns(tables, opts.where);
  const local = opts.where !== undefined && !pushed ? opts.where : undefined;
  let remaining = opts.limit ?? Infinity;
  // Without a local filter a page never needs to be bigger than what is left to send.
  const size = local ? pageSize : Math.min(pageSize, remaining);
  const pages = store.scan({
    projectId: opts.projectId,
    fromMs: opts.fromMs,
    toMs: opts.toMs,
    events: opts.events,
    where: pushed ? opts.where : undefined,
    pageSize: size,
  });
  try {
    for await (const rows of pages) {
      if (remaining <= 0 || opts.signal?.aborted) return;
      readbackEventsRead.inc({ purpose: opts.purpose }, rows.length);
      const scanned = rows.map((e) => ({ timeMs: e.time, resolvedId: e.resolvedId, record: toExportRecord(e) }));
      if (tables.length > 0) {
        const joins = await joinsFor(
          db,
          tables,
          scanned.map((s) => s.record),
        );
        for (const s of scanned) enrich(s.record.properties, joins);
      }
      let out = local ? scanned.filter((s) => truthy(evaluate(local, s.record.properties))) : scanned;
      if (out.length > remaining) out = out.slice(0, remaining);
      remaining -= out.length;
      if (out.length > 0) yield out;
      if (remaining <= 0 || opts.signal?.aborted) return;
    }
  } finally {
    await pages.return(undefined);
  }
}

/**
 * The insights (segmentation) report: events of a date range counted per time bucket, one row
 * per event name or, with `on`, per value of that expression; `type` counts events (general),
 * distinct resolved users (unique) or events per resolved user (average). The counting is one
 * query in the event store (EventStore.report). Only an expression the store cannot take
 * (where-plan.ts), or one reading a lookup-table column, is evaluated here over a scan — the
 * documented fallback (docs/read-back.md). Unlike the event catalog it sees every stored event of
 * the range, however old — this is where imported history is checked.
 */
import type { DbOrTrx } from '../db/knex.js';
import { segmentationFromCells, segmentLabels, type SegmentationResult } from '../domain/segmentation.js';
import { bucketStart, type DayRange, type Unit } from '../domain/time-buckets.js';
import { evaluate } from '../domain/where-evaluate.js';
import type { Expr } from '../domain/where-expression.js';
import type { EventStore, ReportCell, ReportQuery, ReportType } from '../store/event-store.js';
import { canPushDown } from '../store/where-plan.js';
import { lookupTablesOf, readsLookupColumns, scanEvents } from './event-scan.js';

export interface InsightsQuery {
  projectId: number;
  range: DayRange;
  unit: Unit;
  type?: ReportType;
  events?: readonly string[];
  where?: Expr;
  on?: Expr;
  /** Rows returned (top by total). */
  limit: number;
  signal?: AbortSignal;
}

export interface InsightsResult extends SegmentationResult {
  legendSize: number;
}

/** The fallback: the same cells as EventStore.report, computed over scanned events. */
async function cellsByScan(db: DbOrTrx, store: EventStore, q: ReportQuery, signal?: AbortSignal): Promise<ReportCell[]> {
  const cells = new Map<string, { segment: string; bucket: number; n: number; ids: Set<string> }>();
  for await (const page of scanEvents(db, store, { ...q, pageSize: 5000, purpose: 'insights', signal })) {
    for (const e of page) {
      const bucket = bucketStart(e.timeMs, q.unit);
      const labels = q.on ? segmentLabels(evaluate(q.on, e.record.properties)) : [e.record.event];
      for (const segment of labels) {
        const key = `${bucket}\u0000${segment}`;
        let c = cells.get(key);
        if (!c) cells.set(key, (c = { segment, bucket, n: 0, ids: new Set() }));
        c.n += 1;
        if (q.type !== 'general') c.ids.add(e.resolvedId);
      }
    }
  }
  return [...cells.values()].map((c) => ({
    segment: c.segment,
    bucket: c.bucket,
    value: q.type === 'general' ? c.n : q.type === 'unique' ? c.ids.size : c.n / c.ids.size,
  }));
}

export async function runInsights(db: DbOrTrx, store: EventStore, q: InsightsQuery): Promise<InsightsResult> {
  const query: ReportQuery = {
    projectId: q.projectId,
    fromMs: q.range.fromMs,
    toMs: q.range.toMs,
    events: q.events,
    where: q.where,
    on: q.on,
    unit: q.unit,
    type: q.type ?? 'general',
  };
  const tables = q.where || q.on ? await lookupTablesOf(db, q.projectId) : [];
  const pushDown = canPushDown(q.where, q.on) && !readsLookupColumns(tables, q.where, q.on);
  const cells = pushDown ? await store.report(query) : await cellsByScan(db, store, query, q.signal);
  // Without `on`, rows are event names; the requested ones appear even at zero.
  const result = segmentationFromCells(cells, q.range, q.unit, q.on ? [] : (q.events ?? []), q.limit);
  return { ...result, legendSize: Object.keys(result.values).length };
}

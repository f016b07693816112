/**
 * The insights (segmentation) report: events of a date range counted per time bucket, one row
 * per event name or, with `on`, per value of that expression. Unlike the event catalog it sees
 * every stored event of the range, however old — this is where imported history is checked.
 */
import type { DbOrTrx } from '../db/knex.js';
import { SegmentCounter, segmentLabels, type SegmentationResult } from '../domain/segmentation.js';
import type { DayRange, Unit } from '../domain/time-buckets.js';
import type { Predicate, Value } from '../domain/where-evaluate.js';
import { scanEvents } from './event-scan.js';

export interface InsightsQuery {
  projectId: number;
  range: DayRange;
  unit: Unit;
  events?: readonly string[];
  where?: Predicate;
  on?: (props: Readonly<Record<string, unknown>>) => Value;
  /** Rows returned (top by total). */
  limit: number;
  signal?: AbortSignal;
}

export interface InsightsResult extends SegmentationResult {
  legendSize: number;
}

export async function runInsights(db: DbOrTrx, q: InsightsQuery): Promise<InsightsResult> {
  // Without `on`, rows are event names; the requested ones appear even at zero.
  const counter = new SegmentCounter(q.range, q.unit, q.on ? [] : (q.events ?? []));
  for await (const page of scanEvents(db, {
    projectId: q.projectId,
    fromMs: q.range.fromMs,
    toMs: q.range.toMs,
    events: q.events,
    where: q.where,
    pageSize: 5000,
    purpose: 'insights',
    signal: q.signal,
  })) {
    for (const e of page) {
      if (q.on) for (const label of segmentLabels(q.on(e.record.properties))) counter.add(e.timeMs, label);
      else counter.add(e.timeMs, e.record.event);
    }
  }
  const result = counter.result(q.limit);
  return { ...result, legendSize: Object.keys(result.values).length };
}

/**
 * The SQL of every read. Exactness comes from one base: the live events of a project, read
 * `FINAL` (the newest version of each dedupe key; on a cluster FINAL runs per shard, exact
 * because all versions of a key share a shard) without delete markers, joined GLOBAL to the
 * first link of each device so `resolved_id` is the linked user or the distinct_id. Conditions
 * on key columns go inside FINAL (all versions of a key agree on them); anything else outside.
 * Large aggregations cut FINAL into time slices that run side by side (timeSlices). Pure:
 * builds text.
 */
import type { Unit } from '../../domain/time-buckets.js';
import type { EventFilter, ReportQuery } from '../event-store.js';
import { isEventColumn, propertyNames } from '../where-plan.js';
import type { Expr } from '../../domain/where-expression.js';
import { segmentLabelsSql, whereSql } from './clickhouse-expression.js';
import { int, list, str } from './clickhouse-sql.js';

export const RESOLVED_ID = "if(link_user_id != '', link_user_id, distinct_id)";

/**
 * `properties["distinct_id"]` in where/on is the distinct_id as stored (as on the SQL stores),
 * not the resolved id.
 */
export const EXPRESSION_COLUMNS = { distinctId: 'distinct_id' };

const PROPERTY_ARRAYS =
  'prop_keys, prop_types, prop_nums, prop_strs, prop_canon, prop_elem_types, prop_elem_nums, prop_elem_strs, prop_elem_canon';

/** First link per device (argMin over the write version): the "first link wins" rule. */
export function linksSql(projectId: number): string {
  return `SELECT device_id, argMin(user_id, ver) AS link_user_id FROM identity_links WHERE project_id = ${int(projectId)} GROUP BY device_id`;
}

/** Key-column conditions of a filter (safe inside FINAL). */
function keyConditions(f: EventFilter): string[] {
  const conds = [`project_id = ${int(f.projectId)}`, `time >= ${int(f.fromMs)}`, `time < ${int(f.toMs)}`];
  if (f.events && f.events.length > 0) conds.push(`event IN ${list(f.events.map(str))}`);
  return conds;
}

/** Whether an expression reads stored properties (not only the event's own columns). */
function readsProperties(e: Expr | undefined): boolean {
  if (!e) return false;
  return [...propertyNames(e)].some((name) => !isEventColumn(name));
}

export interface LiveOptions {
  /** Key-column conditions added inside FINAL (e.g. the keyset position). */
  extraKeyConditions?: string[];
  /** Also return the JSON text (scans). */
  properties?: boolean;
  /** Also return `resolved_id` (needs the identity join). */
  resolved?: boolean;
  /** The `on` expression the caller will compute over the rows. */
  on?: Expr;
  /** A hot property's column holding `on`'s labels: returned instead of the property arrays `on` would read. */
  segmentColumn?: string;
  /** Interior time bounds, ascending: FINAL runs once per slice between them (see timeSlices). */
  sliceBounds?: readonly number[];
}

/**
 * The filter's range cut at the bounds into slices, as key conditions. FINAL merges one stream
 * on one thread; slices are separate FINALs that ClickHouse runs side by side under UNION ALL.
 * Exact, because `time` is part of the dedupe key: all versions of an event fall in one slice.
 */
function timeSlices(bounds: readonly number[] = []): string[][] {
  if (bounds.length === 0) return [[]];
  return [[`time < ${int(bounds[0]!)}`], ...bounds.map((b, i) => [`time >= ${int(b)}`, ...(i + 1 < bounds.length ? [`time < ${int(bounds[i + 1]!)}`] : [])])];
}

/**
 * Live events of the filter, `where` applied: a FROM-able subquery with event, distinct_id,
 * time, insert_id and what the options ask for. FINAL reads every column it returns, so only
 * the needed ones are selected (property arrays only when where/on read properties).
 */
export function liveEventsSql(f: EventFilter, o: LiveOptions = {}): string {
  const wantArrays = readsProperties(f.where) || (!o.segmentColumn && readsProperties(o.on));
  const cols = ['event', 'distinct_id', 'time', 'insert_id'];
  if (o.resolved) cols.push('device_id');
  if (o.properties) cols.push('properties');
  if (o.segmentColumn) cols.push(o.segmentColumn);
  if (wantArrays) cols.push(PROPERTY_ARRAYS);
  const keyConds = [...keyConditions(f), ...(o.extraKeyConditions ?? [])];
  const inner = timeSlices(o.sliceBounds)
    .map((slice) => `SELECT ${cols.join(', ')}, is_deleted FROM events FINAL WHERE ${[...keyConds, ...slice].join(' AND ')}`)
    .join(' UNION ALL ');
  const where = ['is_deleted = 0'];
  if (f.where) where.push(whereSql(f.where, EXPRESSION_COLUMNS));
  if (!o.resolved) return `SELECT ${cols.join(', ')} FROM (${inner}) WHERE ${where.join(' AND ')}`;
  return (
    `SELECT ${cols.join(', ')}, ${RESOLVED_ID} AS resolved_id FROM (${inner}) ` +
    `GLOBAL ANY LEFT JOIN (${linksSql(f.projectId)}) USING device_id WHERE ${where.join(' AND ')}`
  );
}

/** Rows (versions included) in the filter's range and the time quantiles that cut it into `slices` parts. */
export function sliceProbeSql(f: EventFilter, slices: number): string {
  const fractions = Array.from({ length: slices - 1 }, (_, i) => ((i + 1) / slices).toFixed(4));
  return `SELECT count() AS n, quantiles(${fractions.join(', ')})(time) AS q FROM events WHERE ${keyConditions(f).join(' AND ')}`;
}

/** Interior bounds from the probe's quantiles: whole ms, strictly inside the range, ascending, distinct. */
export function sliceBounds(f: EventFilter, quantiles: readonly number[]): number[] {
  const out: number[] = [];
  for (const q of quantiles) {
    const b = Math.round(q);
    if (b > f.fromMs && b < f.toMs && b > (out[out.length - 1] ?? -Infinity)) out.push(b);
  }
  return out;
}

/** Where the keyset page starts: strictly after this (time, event, distinct_id, insert_id). */
export interface ScanCursor {
  time: number;
  event: string;
  distinctId: string;
  insertId: string;
}

function keyset(after?: ScanCursor): string[] {
  if (!after) return [];
  return [
    `time >= ${int(after.time)}`,
    `(time, event, distinct_id, insert_id) > (${int(after.time)}, ${str(after.event)}, ${str(after.distinctId)}, ${str(after.insertId)})`,
  ];
}

const SCAN_ORDER = 'ORDER BY time, event, distinct_id, insert_id';

/** First and last event time of the filter's range (the span a scan's windows cover), and whether there is any. */
export function timeSpanSql(f: EventFilter): string {
  return `SELECT min(time) AS first, max(time) AS last, count() AS n FROM events WHERE ${keyConditions(f).join(' AND ')}`;
}

/**
 * The time of the `pageSize`-th live event after the cursor within the filter's range (which the
 * caller narrows to a window), if there are that many. Reads key columns only, so it is cheap
 * next to the page itself: FINAL cannot stop early on 18.16, so the page query is bounded by it.
 */
export function pageBoundSql(f: EventFilter, pageSize: number, after?: ScanCursor): string {
  return `SELECT time FROM (${liveEventsSql(f, { extraKeyConditions: keyset(after) })}) ${SCAN_ORDER} LIMIT 1 OFFSET ${int(pageSize - 1)}`;
}

/** One page after the cursor, in (time, event, distinct_id, insert_id) order. */
export function scanPageSql(f: EventFilter, pageSize: number, after?: ScanCursor): string {
  return (
    `SELECT event, distinct_id, time, insert_id, properties, resolved_id FROM (${liveEventsSql(f, { extraKeyConditions: keyset(after), properties: true, resolved: true })}) ` +
    `${SCAN_ORDER} LIMIT ${int(pageSize)}`
  );
}

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/**
 * Floor division of `time` to a multiple of `m` ms (correct for negative times too). The divisor
 * of `%` is an Int64: ClickHouse 18.16 types `Int64 % 60000` as the divisor's small type, so a
 * remainder of 32,768 ms or more wrapped negative and the event fell into the previous minute.
 */
function floorTo(m: number): string {
  return `(intDiv(time, ${m}) - if(time % toInt64(${m}) < 0, 1, 0)) * ${m}`;
}

/** domain/time-buckets.ts `bucketStart` in SQL (UTC; weeks start on Monday). */
export function bucketSql(unit: Unit): string {
  switch (unit) {
    case 'minute':
      return floorTo(MINUTE);
    case 'hour':
      return floorTo(HOUR);
    case 'day':
      return floorTo(DAY);
    case 'week': {
      // Days since the epoch; 1970-01-01 was a Thursday, 3 days after a Monday.
      const day = `(intDiv(time, ${DAY}) - if(time % toInt64(${DAY}) < 0, 1, 0))`;
      return `(${day} - ((${day} + 3) % toInt64(7) + 7) % toInt64(7)) * ${DAY}`;
    }
    case 'month':
      return `toInt64(toUnixTimestamp(toDateTime(toStartOfMonth(toDateTime(intDiv(time, 1000), 'UTC')), 'UTC'))) * 1000`;
  }
}

/** The catalog: live events since the filter's start counted by name, most frequent first, ties by name. */
export function eventNamesSql(f: EventFilter, limit: number, bounds?: readonly number[]): string {
  return `SELECT event, count() AS n FROM (${liveEventsSql(f, { sliceBounds: bounds })}) GROUP BY event ORDER BY n DESC, event ASC LIMIT ${int(limit)}`;
}

/** How a report reads, decided by the store from what the server has (hot columns, threads). */
export type ReportPlan = Pick<LiveOptions, 'segmentColumn' | 'sliceBounds'>;

export function reportSql(q: ReportQuery, plan: ReportPlan = {}): string {
  const resolved = q.type !== 'general';
  const labels = plan.segmentColumn ?? (q.on ? segmentLabelsSql(q.on, EXPRESSION_COLUMNS) : undefined);
  const segment = labels ? `arrayJoin(${labels})` : 'event';
  const value =
    q.type === 'general' ? 'toFloat64(count())' : q.type === 'unique' ? 'toFloat64(uniqExact(resolved_id))' : 'count() / uniqExact(resolved_id)';
  return (
    `SELECT segment, bucket, ${value} AS value FROM (` +
    `SELECT ${segment} AS segment, ${bucketSql(q.unit)} AS bucket${resolved ? ', resolved_id' : ''} FROM (${liveEventsSql(q, { resolved, on: q.on, ...plan })})` +
    `) GROUP BY segment, bucket ORDER BY segment, bucket`
  );
}

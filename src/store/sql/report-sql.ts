/**
 * The SQL stores' segmentation report as one query: rows of (segment, bucket, events, distinct
 * resolved ids) grouped in the database. Buckets are UTC and match domain/time-buckets.ts
 * (`bucketStart`); segment labels match domain/segmentation.ts (`segmentLabels`): a string as
 * is, `undefined` for a missing property, JSON text for everything else, and each distinct
 * element of a non-empty list.
 */
import { dialect, rawRows, toNumber, type Db, type DbOrTrx, type Dialect } from '../../db/knex.js';
import { DAY_MS, type Unit } from '../../domain/time-buckets.js';
import type { ReportCell, ReportQuery } from '../event-store.js';
import { planSegment, planWhere } from '../where-plan.js';
import { filterSql, RESOLVED_ID, RESOLVE_JOIN } from './filter-sql.js';
import type { Binding, Fragment } from './where-sql.js';

interface Segment {
  from: string;
  fromBindings: Binding[];
  label: string;
  labelBindings: Binding[];
}

const UNIT_MS: Partial<Record<Unit, number>> = { minute: 60_000, hour: 3_600_000, day: DAY_MS };

/** The bucket of `e.time`: epoch ms of its start, or `YYYY-MM` text for months. */
function bucketSql(d: Dialect, unit: Unit): string {
  const ms = UNIT_MS[unit];
  if (ms) return `((e.time / ${ms}) * ${ms})`;
  if (unit === 'week') {
    // Days since the epoch minus days since Monday (1970-01-01 was a Thursday: +3).
    return `(((e.time / ${DAY_MS}) - ((e.time / ${DAY_MS}) + 3) % 7) * ${DAY_MS})`;
  }
  return d === 'postgres' ? `to_char(to_timestamp(e.time / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')` : `strftime('%Y-%m', e.time / 1000, 'unixepoch')`;
}

function bucketMs(value: unknown, unit: Unit): number {
  if (unit !== 'month') return toNumber(value);
  const [y, m] = String(value).split('-').map(Number);
  return Date.UTC(y!, m! - 1, 1);
}

/**
 * FROM-clause addition and label expression of an `on` property. SQLite walks a list with
 * json_each and takes each element's own JSON text (`->`), so numbers keep the text JSON.stringify
 * wrote; PostgreSQL renders jsonb (see docs/read-back.md for the few labels that differ there).
 */
function segmentSql(d: Dialect, q: ReportQuery): Segment {
  if (!q.on) return { from: '', label: 'e.event', labelBindings: [], fromBindings: [] };
  const seg = planSegment(q.on);
  if (!seg) throw new Error('this `on` expression cannot be pushed down (check canPushDown first)');
  if (seg.kind === 'column') {
    return { from: '', label: seg.column === 'distinct_id' ? 'e.distinct_id' : 'e.insert_id', labelBindings: [], fromBindings: [] };
  }
  if (d === 'postgres') {
    const J = '(e.properties -> ?::text)';
    return {
      from:
        ` CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(${J}) = 'array' AND jsonb_array_length(${J}) > 0 ` +
        `THEN ${J} ELSE jsonb_build_array(${J}) END) AS s(v)`,
      fromBindings: [seg.name, seg.name, seg.name, seg.name],
      label:
        `CASE WHEN ${J} IS NULL THEN 'undefined' WHEN jsonb_typeof(${J}) = 'array' AND jsonb_array_length(${J}) = 0 THEN 'undefined' ` +
        `WHEN jsonb_typeof(s.v) = 'string' THEN s.v #>> '{}' ELSE s.v::text END`,
      labelBindings: [seg.name, seg.name, seg.name],
    };
  }
  const p = `$."${seg.name}"`;
  const T = 'json_type(e.properties, ?)';
  const LEN = 'json_array_length(e.properties, ?)';
  // s walks the list, or a one-element array holding the scalar's JSON (null when absent).
  return {
    from: ` CROSS JOIN json_each(CASE WHEN ${T} = 'array' AND ${LEN} > 0 THEN e.properties -> ? ELSE json_array(e.properties -> ?) END) AS s`,
    fromBindings: [p, p, p, p],
    label:
      `CASE WHEN ${T} IS NULL THEN 'undefined' WHEN ${T} = 'array' THEN ` +
      `(CASE WHEN ${LEN} = 0 THEN 'undefined' WHEN s.type = 'text' THEN s.value ELSE (e.properties -> ?) -> s.fullkey END) ` +
      `WHEN ${T} = 'text' THEN json_extract(e.properties, ?) ELSE e.properties -> ? END`,
    labelBindings: [p, p, p, p, p, p, p],
  };
}

/**
 * Two planner settings for the report's one aggregation pass. JIT: Postgres guesses 100 rows per
 * set-returning call (the list walk of `on`), so a report over a few thousand events already
 * looks expensive enough to JIT-compile: measured 0.9 s of JIT for a 0.2 s query over 50k events.
 * Nested loops: right after a bulk load (a sync, a migration) the statistics still say the
 * project has a handful of events, and the planner joins identity links by nested loop — measured
 * minutes instead of a second for `unique` over 250k events. A hash or merge join is never much
 * worse for a report, which reads the whole range anyway.
 */
function withoutJit(db: DbOrTrx, sql: string, bindings: Binding[]): Promise<unknown> {
  const run = async (trx: DbOrTrx) => {
    await trx.raw('SET LOCAL jit = off');
    await trx.raw('SET LOCAL enable_nestloop = off');
    return trx.raw(sql, bindings);
  };
  return 'isTransaction' in db && db.isTransaction ? run(db) : (db as Db).transaction(run);
}

export async function reportSql(db: DbOrTrx, q: ReportQuery): Promise<ReportCell[]> {
  const d = dialect(db);
  const seg = segmentSql(d, q);
  const cond = q.where ? planWhere(q.where) : undefined;
  if (q.where && !cond) throw new Error('this `where` expression cannot be pushed down (check canPushDown first)');
  const filter: Fragment = filterSql(d, q, cond);
  const resolve = q.type !== 'general';
  // One row per (event, label): a list holding "a" twice counts once under "a". Only a list walk
  // can repeat an event; without one, DISTINCT would only cost a sort of the whole range.
  const distinct = seg.from !== '' ? 'DISTINCT e.id AS id, ' : '';
  const inner =
    `SELECT ${distinct}${seg.label} AS seg, ${bucketSql(d, q.unit)} AS bkt${resolve ? `, ${RESOLVED_ID} AS rid` : ''} ` +
    `FROM events e${resolve ? RESOLVE_JOIN : ''}${seg.from} WHERE ${filter.sql}`;
  const sql = `SELECT seg, bkt, COUNT(*) AS n${resolve ? ', COUNT(DISTINCT rid) AS u' : ''} FROM (${inner}) c GROUP BY seg, bkt`;
  // Bindings in text order: the label (select list), the FROM addition, the filter.
  const bindings = [...seg.labelBindings, ...seg.fromBindings, ...filter.bindings];
  const rows = (d === 'postgres' ? await withoutJit(db, sql, bindings) : await db.raw(sql, bindings)) as unknown;
  const list = rawRows(db, rows);
  return list.map((r) => {
    const n = toNumber(r.n);
    const u = resolve ? toNumber(r.u) : 0;
    return { segment: String(r.seg), bucket: bucketMs(r.bkt, q.unit), value: q.type === 'general' ? n : q.type === 'unique' ? u : n / u };
  });
}

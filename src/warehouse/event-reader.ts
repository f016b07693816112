/**
 * The CPU half of an events sync: read a batch of source rows, map each to an event record,
 * validate the records (the write path's own validateEvents, strict) and serialise them into the
 * writer's column form. Pure computation around the connector's stream, so it runs either inline
 * or on a worker thread (event-reader-thread.ts) while the writer commits the previous batch.
 */
import type { ConnectorContext, ReadSpec, Row, WarehouseConnector } from '../../connectors/warehouse.js';
import { rowBatches } from './row-batches.js';
import { toEventRows, type EventRows } from '../store/event-rows.js';
import { compileEventMapper, type EventMapping } from '../domain/warehouse-mapping.js';
import { compareWatermarks, watermarkValue } from '../domain/warehouse-values.js';
import { validateEvents } from '../ingest/events.ingest.js';

export interface EventReadPlan {
  spec: ReadSpec;
  mapping: EventMapping;
  stamp: Record<string, unknown>;
  batchSize: number;
  /** time_based: the column whose greatest value becomes the watermark. */
  insertTimeColumn?: string;
}

/** One batch, ready for the writer: rows to insert and the rejected rows (1-based run row numbers). */
export interface PreparedEventBatch {
  /** Source rows this batch covers (accepted and rejected). */
  read: number;
  rows: EventRows;
  rejected: { row: number; field: string; message: string }[];
  /** The greatest insert-time value among the batch's rows. */
  maxInsertTime?: string | number;
}

/**
 * `rowNumbers`: the 1-based run row number of rows[0] (the rest follow), or of each row (a mirror
 * prepares only the new and changed rows of a batch).
 */
export function prepareEventRows(rows: Row[], rowNumbers: number | readonly number[], plan: EventReadPlan, map: ReturnType<typeof compileEventMapper>): PreparedEventBatch {
  const numberOf = typeof rowNumbers === 'number' ? (i: number) => rowNumbers + i : (i: number) => rowNumbers[i]!;
  const rejected: PreparedEventBatch['rejected'] = [];
  const records: unknown[] = [];
  const rowOf: number[] = [];
  let maxInsertTime: string | number | undefined;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (plan.insertTimeColumn !== undefined) {
      const v = watermarkValue(row[plan.insertTimeColumn]);
      if (v !== undefined && (maxInsertTime === undefined || compareWatermarks(v, maxInsertTime) > 0)) maxInsertTime = v;
    }
    const out = map(row);
    if (out.ok) {
      records.push(out.value);
      rowOf.push(numberOf(i));
    } else rejected.push({ row: numberOf(i), field: out.field, message: out.message });
  }
  // strict: times before 1971 or over an hour ahead are bad values, reported like any other.
  const { events, rejected: invalid } = validateEvents(records, { strict: true, stamp: plan.stamp, now: Date.now() });
  for (const r of invalid) rejected.push({ row: rowOf[r.index]!, field: r.field, message: r.message });
  rejected.sort((a, b) => a.row - b.row);
  return { read: rows.length, rows: toEventRows(events), rejected, maxInsertTime };
}

/** Source rows in batches, each with the 1-based run row number of its first row (from `offset` on). */
export async function* numberedRowBatches(connector: WarehouseConnector, plan: EventReadPlan, ctx: ConnectorContext): AsyncIterable<{ first: number; rows: Row[] }> {
  let first = (plan.spec.offset ?? 0) + 1;
  for await (const rows of rowBatches(connector, plan.spec, plan.batchSize, ctx)) {
    yield { first, rows };
    first += rows.length;
  }
}

/** Batches of prepared events from `offset` on (1-based row numbers continue from it). */
export async function* readEventBatches(connector: WarehouseConnector, plan: EventReadPlan, ctx: ConnectorContext): AsyncIterable<PreparedEventBatch> {
  const map = compileEventMapper(plan.mapping);
  for await (const { first, rows } of numberedRowBatches(connector, plan, ctx)) {
    yield prepareEventRows(rows, first, plan, map);
  }
}

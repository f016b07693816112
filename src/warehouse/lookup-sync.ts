/**
 * A lookup-table sync: the whole table as CSV (key column first), then one all-or-nothing
 * replace through the lookup-table write path. A replace is idempotent, so a crash before the
 * run is marked done just replaces again on the retry. Memory is bounded by
 * WAREHOUSE_LOOKUP_MAX_BYTES (lookup tables are small reference tables).
 */
import type { ReadSpec, WarehouseConnector } from '../../connectors/warehouse.js';
import type { Db } from '../db/knex.js';
import { compileLookupMapper } from '../domain/warehouse-mapping.js';
import { replaceLookupTable } from '../ingest/lookup-tables.ingest.js';
import { NotFoundError, PermanentError, ValidationError } from '../lib/errors.js';
import type { SyncState } from './sync-state.js';

export interface LookupSyncInput {
  db: Db;
  connector: WarehouseConnector;
  spec: ReadSpec;
  keyColumn: string;
  lookupTableId: number;
  maxBytes: number;
  signal: AbortSignal;
  log: { info: (o: object, m?: string) => void; warn: (o: object, m?: string) => void };
}

export interface LookupSyncResult {
  rowsRead: number;
  rowsSkipped: number;
  rowsLoaded: number;
  /** Log lines to add (rejected samples, failed CSV rows). */
  lines: string[];
}

export async function syncLookupTable(input: LookupSyncInput, state: SyncState): Promise<LookupSyncResult | 'interrupted'> {
  const mapper = compileLookupMapper(input.keyColumn, input.spec.columns ?? []);
  const lines: string[] = [mapper.header];
  let bytes = mapper.header.length + 1;
  const out: LookupSyncResult = { rowsRead: 0, rowsSkipped: 0, rowsLoaded: 0, lines: [] };
  // The source row of each CSV row, so that a failure names the row the warehouse holds.
  const sourceRows: number[] = [];
  for await (const row of input.connector.stream({ ...input.spec, offset: 0 }, { log: input.log, signal: input.signal })) {
    out.rowsRead += 1;
    const line = mapper.line(row);
    if (!line.ok) {
      out.rowsSkipped += 1;
      if (out.lines.length < 20) out.lines.push(`row ${out.rowsRead} rejected: ${line.field}: ${line.message}`);
      continue;
    }
    bytes += line.value.length + 1;
    if (bytes > input.maxBytes) {
      throw new PermanentError(`the lookup table is larger than WAREHOUSE_LOOKUP_MAX_BYTES (${input.maxBytes} bytes) at row ${out.rowsRead}; nothing was replaced`);
    }
    lines.push(line.value);
    sourceRows.push(out.rowsRead);
    if (out.rowsRead % 10_000 === 0 && input.signal.aborted) return 'interrupted';
  }
  if (input.signal.aborted) return 'interrupted';
  state.counts.rowsRead = out.rowsRead;
  try {
    const res = await replaceLookupTable(input.db, input.lookupTableId, lines.join('\n') + '\n');
    out.rowsLoaded = res.rows;
  } catch (err) {
    if (err instanceof NotFoundError) throw new PermanentError(`lookup table ${input.lookupTableId} no longer exists`);
    if (err instanceof ValidationError) {
      const failed = (err.details?.failed_records as { index: number; message: string }[] | undefined) ?? [];
      const detail = failed.slice(0, 5).map((f) => `row ${sourceRows[f.index]}: ${sourceRowMessage(f.message, sourceRows)}`);
      throw new PermanentError(
        `the lookup table was not replaced (${out.rowsRead} rows read, ${out.rowsSkipped} rejected): ${err.message}${detail.length ? ` (${detail.join('; ')})` : ''}`,
      );
    }
    throw err;
  }
  return out;
}

/** The CSV parser's message in the warehouse's terms: no CSV line, a duplicate's first row as read. */
function sourceRowMessage(message: string, sourceRows: readonly number[]): string {
  return message.replace(/^line \d+: /, '').replace(/\(first in row (\d+)\)/, (_, i: string) => `(first in row ${sourceRows[Number(i)]})`);
}

/**
 * The single write path for lookup tables: a full replace from CSV, used by `PUT /lookup-tables/{id}`
 * and by warehouse syncs of lookup tables. All-or-nothing: the whole CSV is parsed (RFC 4180,
 * streamed through csv-parse) and checked first; any bad row or header throws
 * ValidationError(400, …, {failed_records}) and nothing is written. Only then are the old rows
 * swapped for the new ones in one short transaction, so a slow upload never holds the writer.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, parse } from 'csv-parse';
import { buildLookupRow, checkHeader } from '../domain/lookup-csv.js';
import type { Db } from '../db/knex.js';
import { findLookupTable, lockLookupTable, replaceLookupRows, type LookupRowJson } from '../db/lookup-tables.repo.js';
import { NotFoundError, ValidationError } from '../lib/errors.js';
import { Utf8Arena } from '../lib/utf8-arena.js';

/** Longest CSV record (characters); a longer one is a 400 rather than a slow parse. */
export const MAX_RECORD_CHARS = 256 * 1024;

/** At most this many failed rows are listed (all are counted). */
export const MAX_FAILED_RECORDS = 100;

export interface FailedRow {
  /** 0-based index of the data row (the first line after the header is 0). */
  index: number;
  message: string;
}

interface Parsed {
  /** Every key, in row order, with its row index (first occurrence). */
  keys: Map<string, number>;
  /** The properties JSON of each row, parallel to `keys` (kept only while no row has failed). */
  jsons: Utf8Arena;
  failed: FailedRow[];
  failedCount: number;
  headerError?: string;
}

const FEED_CHUNK = 64 * 1024;

/**
 * The input as modest chunks: csv-parse emits every record of a chunk at once, ignoring
 * backpressure, so one whole-file chunk would hold all its records in memory together.
 */
function* sliced(whole: Buffer): Generator<Buffer> {
  for (let i = 0; i < whole.length; i += FEED_CHUNK) yield whole.subarray(i, i + FEED_CHUNK);
}

function toIterable(csv: AsyncIterable<Buffer | string> | Buffer | string): AsyncIterable<Buffer | string> | Iterable<Buffer> {
  if (typeof csv === 'string') return sliced(Buffer.from(csv, 'utf8'));
  return Buffer.isBuffer(csv) ? sliced(csv) : csv;
}

async function parseCsv(csv: AsyncIterable<Buffer | string> | Buffer | string): Promise<Parsed> {
  const out: Parsed = { keys: new Map(), jsons: new Utf8Arena(), failed: [], failedCount: 0 };
  const fail = (index: number, message: string) => {
    out.failedCount += 1;
    if (out.failed.length < MAX_FAILED_RECORDS) out.failed.push({ index, message });
  };
  let header: string[] | undefined;
  const keys = out.keys;
  let index = 0;

  // Counted as the parser produces records (not as the sink consumes them): a syntax error can
  // end the pipeline before buffered records reach the sink, and must still name its row.
  let produced = 0;
  let firstRecord: string[] | undefined;
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    info: true,
    // csv-parse slows down badly on one huge field; no sane lookup row is this large.
    max_record_size: MAX_RECORD_CHARS,
    on_record: (record: string[]) => {
      if (produced === 0) firstRecord = record;
      produced += 1;
      return record;
    },
  });
  try {
    await pipeline(Readable.from(toIterable(csv)), parser, async (records: AsyncIterable<{ record: string[]; info: { lines: number } }>) => {
      for await (const { record, info } of records) {
        if (header === undefined) {
          header = record;
          out.headerError = checkHeader(header);
          continue;
        }
        // Without a valid header no row can be judged; read on only to drain the input (stopping
        // the pipeline early would surface as a premature-close error instead of this 400).
        if (out.headerError) continue;
        const rowIndex = index++;
        const row = buildLookupRow(header, record);
        if (!row.ok) {
          fail(rowIndex, `line ${info.lines}: ${row.message}`);
          continue;
        }
        const first = keys.get(row.key);
        if (first !== undefined) {
          fail(rowIndex, `line ${info.lines}: duplicate key '${row.key.slice(0, 80)}' (first in row ${first})`);
          continue;
        }
        keys.set(row.key, rowIndex);
        // Once a row has failed nothing will be written, so stop keeping rows.
        if (out.failedCount === 0) out.jsons.push(JSON.stringify(row.properties));
      }
    });
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    // Malformed CSV (an unclosed quote, a stray quote in an unquoted field): nothing after it can be read.
    if (produced === 0) out.headerError = `the CSV is not valid RFC 4180: ${err.message}`;
    else {
      header ??= firstRecord;
      out.headerError ??= checkHeader(header!);
      fail(produced - 1, `not valid RFC 4180 CSV: ${err.message}`);
    }
  }
  if (header === undefined && !out.headerError) out.headerError = checkHeader([]);
  return out;
}

/** The parsed rows as (key, properties JSON) pairs, decoded one at a time as they are written. */
function* rowsOf(parsed: Parsed): Generator<LookupRowJson> {
  let i = 0;
  for (const key of parsed.keys.keys()) yield [key, parsed.jsons.get(i++)];
}

/**
 * Replaces every row of a lookup table with the rows of a CSV. Throws NotFoundError (404) for an
 * unknown table and ValidationError(400, message, {failed_records}) for any invalid content.
 */
export async function replaceLookupTable(
  db: Db,
  lookupTableId: number,
  csv: AsyncIterable<Buffer | string> | Buffer | string,
): Promise<{ rows: number }> {
  if (!(await findLookupTable(db, lookupTableId))) throw new NotFoundError(`lookup table ${lookupTableId} not found`);
  const parsed = await parseCsv(csv);
  if (parsed.headerError) throw new ValidationError(400, parsed.headerError, { failed_records: [] });
  if (parsed.failedCount > 0) {
    throw new ValidationError(
      400,
      `${parsed.failedCount} row(s) failed validation; the lookup table was not changed`,
      { failed_records: parsed.failed },
    );
  }
  await db.transaction(async (trx) => {
    // Locked: the table may have been deleted while the CSV streamed in, and a concurrent replace
    // or delete of it waits for this one to commit (or this one for it).
    if (!(await lockLookupTable(trx, lookupTableId))) throw new NotFoundError(`lookup table ${lookupTableId} not found`);
    await replaceLookupRows(trx, lookupTableId, rowsOf(parsed), Date.now());
  });
  return { rows: parsed.jsons.length };
}

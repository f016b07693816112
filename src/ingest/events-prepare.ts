/**
 * The CPU half of an /import request, from the bytes on the wire to rows ready for the writer:
 * inflate (bounded), parse JSON or NDJSON, validate every record, serialise each event's
 * properties. It is pure computation, so the web process runs it on a worker thread and keeps
 * its own thread for the single SQLite writer; it runs inline as well (small bodies, no pool).
 */
import zlib from 'node:zlib';
import type { RecordRejection } from '../domain/event-record.js';
import { parseJsonRecords, parseNdjsonRecords } from '../domain/payload-text.js';
import { toEventRows, type EventRows } from '../store/event-rows.js';
import { ValidationError } from '../lib/errors.js';
import { ROW_ENCODERS, type RowEncoding } from '../store/row-encodings.js';
import { validateEvents, type ValidateOptions } from './events.ingest.js';

export interface PrepareInput {
  /** The request body as received (gzip when `gzip`, zlib deflate when `deflate`). */
  body: Uint8Array;
  gzip: boolean;
  deflate?: boolean;
  ndjson: boolean;
  /** Decompressed bytes allowed: 413 beyond, checked while inflating. */
  maxBytes: number;
  maxRecords: number;
  validate: Omit<ValidateOptions, 'stamp'>;
  /** The event store's row encoding (EventStore.rowEncoding), done here while properties are objects. */
  encoding?: RowEncoding;
}

export interface PreparedBatch {
  received: number;
  rows: EventRows;
  rejected: RecordRejection[];
}

function inflate(body: Uint8Array, maxBytes: number, deflate: boolean): Buffer {
  try {
    // maxOutputLength stops inflating at the limit: a gzip bomb never grows past it.
    const options = { maxOutputLength: Math.max(1, maxBytes) };
    return deflate ? zlib.inflateSync(body, options) : zlib.gunzipSync(body, options);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new ValidationError(413, 'Request Entity Too Large');
    }
    throw new ValidationError(400, `body is not valid ${deflate ? 'deflate' : 'gzip'} (truncated or corrupt)`);
  }
}

export function prepareEventBatch(input: PrepareInput): PreparedBatch {
  const bytes = input.gzip || input.deflate ? inflate(input.body, input.maxBytes, Boolean(input.deflate)) : Buffer.from(input.body.buffer, input.body.byteOffset, input.body.byteLength);
  if (bytes.length > input.maxBytes) throw new ValidationError(413, 'Request Entity Too Large');
  const text = bytes.toString('utf8');
  const records = input.ndjson ? parseNdjsonRecords(text, input.maxRecords) : parseJsonRecords(text, input.maxRecords);
  const { events, rejected } = validateEvents(records, input.validate);
  return { received: records.length, rows: toEventRows(events, input.encoding && ROW_ENCODERS[input.encoding]()), rejected };
}

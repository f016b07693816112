/**
 * A chunk of a batch import before it is committed, in its three forms: the raw units as read
 * from the file (`RawChunk`, cheap to collect and to post to a worker thread), the units parsed
 * into records (`ParsedChunk`, what profile updates take), and events validated and turned into
 * rows (`PreparedEventChunk`, what the event store takes). Pure: runs on the job's thread or on
 * the ingest worker (src/ingest/ingest-worker.ts), with the same result.
 */
import type { RejectedSample } from '../db/batch-imports.repo.js';
import type { BatchType } from '../domain/batch-format.js';
import { recordFromCsv, recordFromJson, type UnitOutcome } from '../domain/batch-record.js';
import { toEventRows, type EventRows } from '../store/event-rows.js';
import { ROW_ENCODERS, type RowEncoding } from '../store/row-encodings.js';
import { validateEvents, type ValidateOptions } from './events.ingest.js';

const EXCERPT_CHARS = 300;

/** Where a chunk sits in the file: it covers units [from, from + units), parsed or not. */
export interface ChunkSpan {
  /** Checkpoint before the chunk: units of the file (or partition) consumed so far. */
  from: number;
  /** Units the chunk covers (the checkpoint moves by this much). */
  units: number;
}

/**
 * Units as read. JSON units travel as one buffer with end offsets: posting thousands of small
 * Buffers to a thread would copy each one's whole backing read buffer.
 */
export type RawChunk = ChunkSpan &
  ({ kind: 'json'; bytes: Uint8Array; ends: number[] } | { kind: 'csv'; header: string[]; rows: string[][] });

export interface ParsedChunk extends ChunkSpan {
  /** Parsed records, with their 0-based position in the file. */
  records: unknown[];
  positions: number[];
  /** Units that could not even be parsed. */
  unparsable: RejectedSample[];
}

export interface PreparedEventChunk extends ChunkSpan {
  rows: EventRows;
  /** Every unit refused (unparsable or invalid), by file position. */
  rejected: RejectedSample[];
}

export function excerpt(record: unknown): string {
  const text = typeof record === 'string' ? record : JSON.stringify(record) ?? String(record);
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/** Collects units read from a file into raw chunks, from a checkpoint on. */
export class RawChunkBuilder {
  private from: number;
  private json: Buffer[] = [];
  private header: string[] = [];
  private rows: string[][] = [];

  constructor(from: number) {
    this.from = from;
  }

  get units(): number {
    return this.json.length + this.rows.length;
  }

  addJson(unit: Buffer): void {
    this.json.push(unit);
  }

  addCsv(header: string[], row: string[]): void {
    this.header = header;
    this.rows.push(row);
  }

  /** The units collected so far as one chunk; the next chunk starts after them. */
  take(): RawChunk {
    const span = { from: this.from, units: this.units };
    this.from += span.units;
    if (this.rows.length > 0) {
      const rows = this.rows;
      this.rows = [];
      return { ...span, kind: 'csv', header: this.header, rows };
    }
    const ends = new Array<number>(this.json.length);
    let end = 0;
    this.json.forEach((u, i) => (ends[i] = end += u.length));
    const bytes = Buffer.concat(this.json, end);
    this.json = [];
    return { ...span, kind: 'json', bytes, ends };
  }
}

export function parseChunk(raw: RawChunk, type: BatchType): ParsedChunk {
  const out: ParsedChunk = { from: raw.from, units: raw.units, records: [], positions: [], unparsable: [] };
  const take = (i: number, outcome: UnitOutcome, text: () => string) => {
    if (outcome.ok) {
      out.records.push(outcome.record);
      out.positions.push(raw.from + i);
    } else out.unparsable.push({ index: raw.from + i, message: outcome.message, record: excerpt(text()) });
  };
  if (raw.kind === 'csv') {
    raw.rows.forEach((row, i) => take(i, recordFromCsv(type, raw.header, row), () => row.join(',')));
    return out;
  }
  const bytes = Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength);
  let start = 0;
  for (let i = 0; i < raw.ends.length; i++) {
    const unit = bytes.subarray(start, raw.ends[i]);
    take(i, recordFromJson(unit), () => unit.toString('utf8', 0, 400));
    start = raw.ends[i]!;
  }
  return out;
}

export interface EventChunkInput {
  raw: RawChunk;
  validate: ValidateOptions;
  /** The event store's row encoding (EventStore.rowEncoding). */
  encoding?: RowEncoding;
}

/**
 * Every unit of the chunk refused, by file position: the unparsable ones, and the records the
 * write path rejected (`index` into `parsed.records`).
 */
export function rejectedSamples(parsed: ParsedChunk, rejected: readonly { index: number; field?: string; message: string }[]): RejectedSample[] {
  const sample = parsed.unparsable.concat(
    rejected.map((r) => ({ index: parsed.positions[r.index]!, field: r.field, message: r.message, record: excerpt(parsed.records[r.index]) })),
  );
  return sample.sort((a, b) => a.index - b.index);
}

/** Parse, validate and serialise an events chunk: everything but the write. */
export function prepareEventChunk({ raw, validate, encoding }: EventChunkInput): PreparedEventChunk {
  const parsed = parseChunk(raw, 'events');
  const { events, rejected } = validateEvents(parsed.records, validate);
  return { from: raw.from, units: raw.units, rows: toEventRows(events, encoding && ROW_ENCODERS[encoding]()), rejected: rejectedSamples(parsed, rejected) };
}

/**
 * Streams an uploaded batch file back as units (raw JSON records or CSV rows), in bounded memory
 * whatever its size: file → (gunzip when it starts with the gzip magic) → splitter. Used twice
 * with the same code: by the upload, to check the file's structure and count its records before
 * the run is created, and by the job, to feed the write path.
 */
import fs from 'node:fs';
import { pipeline, Transform, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { parse as parseCsv } from 'csv-parse';
import { looksGzipped, type BatchFormat, type BatchType } from '../domain/batch-format.js';
import { missingCsvColumns } from '../domain/batch-record.js';
import { JsonArraySplitter, LineSplitter, RecordTooLargeError } from '../domain/record-splitters.js';

/** A whole-file problem (not one bad record): 400 at upload, a permanent failure in a job. */
export class BatchFileError extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message);
    this.name = 'BatchFileError';
  }
}

export type Units = { kind: 'json'; units: Buffer[] } | { kind: 'csv'; header: string[]; rows: string[][] };

export interface ReadOptions {
  /** Decompressed bytes allowed (a gzip bomb stops here). */
  maxBytes?: number;
  /**
   * Longest record (NDJSON line, JSON array element, CSV row) in bytes: the split stops there,
   * so one huge record is never buffered whole (413 naming the record's index).
   */
  maxRecordBytes?: number;
  highWaterMark?: number;
}

export function fileIsGzipped(path: string): boolean {
  const fd = fs.openSync(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const n = fs.readSync(fd, head, 0, 2, 0);
    return looksGzipped(head.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
}

function limitBytes(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > max) cb(new BatchFileError(413, `the file is larger than ${max} bytes uncompressed`));
      else cb(null, chunk);
    },
  });
}

/** The decompressed byte stream of the file. */
function openBytes(path: string, options: ReadOptions): Readable {
  // Sniff first: a file gone meanwhile (another attempt finished the run and deleted it) then
  // throws here, not from a stream already opened with nobody listening for its error.
  const gzipped = fileIsGzipped(path);
  const stages: (Readable | Transform)[] = [fs.createReadStream(path, { highWaterMark: options.highWaterMark ?? 1 << 20 })];
  if (gzipped) stages.push(zlib.createGunzip({ chunkSize: 1 << 16 }));
  if (options.maxBytes !== undefined) stages.push(limitBytes(options.maxBytes));
  // pipeline(), not pipe(): an error anywhere reaches the last stage, which the reader reads
  // (so the callback has nothing left to do), and a reader that stops early (destroys the last
  // stage) closes the file too.
  if (stages.length > 1) pipeline(stages, () => {});
  return stages[stages.length - 1]!;
}

function tooLarge(index: number, max: number): BatchFileError {
  return new BatchFileError(413, `record ${index} is larger than ${max} bytes (the limit of one record); the file was not imported`);
}

function asFileError(err: unknown, csvRows: number, maxRecordBytes: number | undefined): Error {
  if (err instanceof BatchFileError) return err;
  if (err instanceof RecordTooLargeError) return tooLarge(err.index, err.maxBytes);
  if ((err as { code?: string })?.code === 'CSV_MAX_RECORD_SIZE') return tooLarge(csvRows, maxRecordBytes ?? 0);
  const e = err as { code?: string; message?: string; name?: string };
  if (e?.code === 'Z_DATA_ERROR' || e?.code === 'Z_BUF_ERROR' || e?.code === 'ERR_ZLIB_INITIALIZATION_FAILED' || /unexpected end of file/i.test(e?.message ?? '')) {
    return new BatchFileError(400, 'the file is not valid gzip (truncated or corrupt)');
  }
  if (e?.name === 'JsonArrayError') return new BatchFileError(400, `not a valid JSON array: ${e.message}`);
  if (typeof e?.code === 'string' && e.code.startsWith('CSV_')) return new BatchFileError(400, `not valid CSV: ${e.message}`);
  return err instanceof Error ? err : new Error(String(err));
}

/** Yields the file's units a decompressed chunk at a time. */
export async function* readUnits(path: string, format: BatchFormat, options: ReadOptions = {}): AsyncGenerator<Units> {
  const bytes = openBytes(path, options);
  const { maxRecordBytes } = options;
  let csvRows = 0;
  try {
    if (format === 'csv') {
      const parser = parseCsv({
        bom: true,
        relax_column_count: true,
        relax_quotes: true,
        skip_empty_lines: true,
        // Characters, not bytes: a row of multi-byte text may use up to 4x this many bytes.
        ...(maxRecordBytes !== undefined ? { max_record_size: maxRecordBytes } : {}),
      });
      bytes.on('error', (err) => parser.destroy(err));
      bytes.pipe(parser);
      let header: string[] | undefined;
      let rows: string[][] = [];
      for await (const row of parser as AsyncIterable<string[]>) {
        if (!header) {
          header = row.map((h) => h.trim());
          continue;
        }
        rows.push(row);
        csvRows += 1;
        if (rows.length >= 1000) {
          yield { kind: 'csv', header, rows };
          rows = [];
        }
      }
      if (!header) throw new BatchFileError(400, 'the CSV file has no header row');
      if (rows.length > 0) yield { kind: 'csv', header, rows };
      return;
    }
    const splitter = format === 'json' ? new JsonArraySplitter(maxRecordBytes) : new LineSplitter(maxRecordBytes);
    for await (const chunk of bytes as AsyncIterable<Buffer>) {
      const units = splitter.push(chunk);
      if (units.length > 0) yield { kind: 'json', units };
    }
    const rest = splitter.end();
    if (rest.length > 0) yield { kind: 'json', units: rest };
  } catch (err) {
    throw asFileError(err, csvRows, maxRecordBytes);
  } finally {
    bytes.destroy();
  }
}

export interface Inspection {
  records: number;
  compression: 'none' | 'gzip';
}

/** Reads the whole file once: structure, CSV header and record count; throws BatchFileError. */
export async function inspectBatchFile(path: string, type: BatchType, format: BatchFormat, options: ReadOptions = {}): Promise<Inspection> {
  let records = 0;
  let headerChecked = false;
  for await (const batch of readUnits(path, format, options)) {
    if (batch.kind === 'csv') {
      if (!headerChecked) {
        const missing = missingCsvColumns(type, batch.header);
        if (missing.length > 0) throw new BatchFileError(400, `the CSV header lacks column(s) ${missing.join(', ')}`);
        headerChecked = true;
      }
      records += batch.rows.length;
    } else records += batch.units.length;
  }
  return { records, compression: fileIsGzipped(path) ? 'gzip' : 'none' };
}

/** A byte range of an uncompressed NDJSON file holding whole lines, the index of its first unit and how many it holds. */
export interface NdjsonRange {
  start: number;
  end: number;
  firstUnit: number;
  /** Absent on partitions planned before it was recorded. */
  units?: number;
}

/** The NDJSON units (non-blank lines) of the byte range [start, end) of an uncompressed file. */
export async function* readNdjsonRange(path: string, start: number, end: number, options: Pick<ReadOptions, 'maxRecordBytes'> = {}): AsyncGenerator<Buffer[]> {
  if (end <= start) return;
  const stream = fs.createReadStream(path, { start, end: end - 1, highWaterMark: 1 << 20 });
  const splitter = new LineSplitter(options.maxRecordBytes);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const units = splitter.push(chunk);
      if (units.length > 0) yield units;
    }
    const rest = splitter.end();
    if (rest.length > 0) yield rest;
  } catch (err) {
    throw asFileError(err, 0, options.maxRecordBytes);
  } finally {
    stream.destroy();
  }
}

/** The first byte after the next newline at or after `from` (the file's size when there is none). */
function nextLineStart(fd: number, from: number, size: number): number {
  const buf = Buffer.alloc(1 << 16);
  for (let pos = from; pos < size; pos += buf.length) {
    const n = fs.readSync(fd, buf, 0, buf.length, pos);
    const nl = buf.subarray(0, n).indexOf(0x0a);
    if (nl !== -1) return pos + nl + 1;
  }
  return size;
}

/**
 * Splits an uncompressed NDJSON file into about `parts` byte ranges of whole lines (a newline
 * ends every range but the last), each with the index of its first unit — one read of the file,
 * counting units the way the import itself will.
 */
export async function planNdjsonRanges(path: string, parts: number): Promise<NdjsonRange[]> {
  const size = fs.statSync(path).size;
  const fd = fs.openSync(path, 'r');
  const cuts: number[] = [0];
  try {
    for (let k = 1; k < parts; k++) {
      const at = nextLineStart(fd, Math.floor((size * k) / parts), size);
      if (at > cuts[cuts.length - 1]! && at < size) cuts.push(at);
    }
  } finally {
    fs.closeSync(fd);
  }
  cuts.push(size);
  const ranges: NdjsonRange[] = [];
  let unit = 0;
  for (let i = 0; i + 1 < cuts.length; i++) {
    const firstUnit = unit;
    for await (const units of readNdjsonRange(path, cuts[i]!, cuts[i + 1]!)) unit += units.length;
    ranges.push({ start: cuts[i]!, end: cuts[i + 1]!, firstUnit, units: unit - firstUnit });
  }
  return ranges;
}

/**
 * Streams an uploaded batch file back as units (raw JSON records or CSV rows), in bounded memory
 * whatever its size: file → (gunzip when it starts with the gzip magic) → splitter. Used twice
 * with the same code: by the upload, to check the file's structure and count its records before
 * the run is created, and by the job, to feed the write path.
 */
import fs from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { parse as parseCsv } from 'csv-parse';
import { looksGzipped, type BatchFormat, type BatchType } from '../domain/batch-format.js';
import { missingCsvColumns } from '../domain/batch-record.js';
import { JsonArraySplitter, LineSplitter } from '../domain/record-splitters.js';

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
  let stream: Readable = fs.createReadStream(path, { highWaterMark: options.highWaterMark ?? 1 << 20 });
  if (fileIsGzipped(path)) {
    const gunzip = zlib.createGunzip({ chunkSize: 1 << 16 });
    stream.on('error', (err) => gunzip.destroy(err));
    stream = stream.pipe(gunzip);
  }
  if (options.maxBytes !== undefined) {
    const limit = limitBytes(options.maxBytes);
    stream.on('error', (err) => limit.destroy(err));
    stream = stream.pipe(limit);
  }
  return stream;
}

function asFileError(err: unknown): Error {
  if (err instanceof BatchFileError) return err;
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
  try {
    if (format === 'csv') {
      const parser = parseCsv({ bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true });
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
        if (rows.length >= 1000) {
          yield { kind: 'csv', header, rows };
          rows = [];
        }
      }
      if (!header) throw new BatchFileError(400, 'the CSV file has no header row');
      if (rows.length > 0) yield { kind: 'csv', header, rows };
      return;
    }
    const splitter = format === 'json' ? new JsonArraySplitter() : new LineSplitter();
    for await (const chunk of bytes as AsyncIterable<Buffer>) {
      const units = splitter.push(chunk);
      if (units.length > 0) yield { kind: 'json', units };
    }
    const rest = splitter.end();
    if (rest.length > 0) yield { kind: 'json', units: rest };
  } catch (err) {
    throw asFileError(err);
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

/**
 * A CSV request body as a stream of chunks, for large uploads that must not be buffered whole:
 * `text/csv` (also `application/csv`, `text/plain`), optionally `Content-Encoding: gzip`. The
 * decompressed size is counted while inflating; past the limit the stream throws 413 (a gzip
 * bomb is cut off). However the consumer stops, the rest of the request is drained so that the
 * error can still be answered on the same connection.
 */
import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { ValidationError } from '../lib/errors.js';

const CSV_TYPES = new Set(['text/csv', 'application/csv', 'text/plain']);

/** Throws 415 (draining the body) unless the Content-Type and Content-Encoding are ones we read. */
export function assertCsvRequest(req: IncomingMessage): { gzipped: boolean } {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!CSV_TYPES.has(type)) {
    req.resume();
    throw new ValidationError(415, `unsupported Content-Type '${type}': send the lookup table as text/csv`);
  }
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (!['identity', 'gzip', 'x-gzip', ''].includes(encoding)) {
    req.resume();
    throw new ValidationError(415, `unsupported Content-Encoding '${encoding}' (use gzip or none)`);
  }
  return { gzipped: encoding === 'gzip' || encoding === 'x-gzip' };
}

export async function* csvBody(req: IncomingMessage, maxBytes: number): AsyncGenerator<Buffer> {
  const { gzipped } = assertCsvRequest(req);
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (!gzipped && Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    throw new ValidationError(413, `Request Entity Too Large: the CSV is larger than ${maxBytes} bytes`);
  }
  const gunzip = gzipped ? zlib.createGunzip() : undefined;
  if (gunzip) req.pipe(gunzip);
  // Iterating req directly must not destroy it on an early stop: we still have to answer.
  const source = gunzip ? gunzip.iterator({ destroyOnReturn: true }) : req.iterator({ destroyOnReturn: false });
  let size = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new ValidationError(413, `Request Entity Too Large: the CSV is larger than ${maxBytes} bytes`);
      yield chunk;
    }
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw new ValidationError(400, gzipped ? 'body is not valid gzip (truncated or corrupt)' : 'could not read request body');
  } finally {
    if (gunzip) {
      req.unpipe(gunzip);
      gunzip.destroy();
    }
    if (!req.readableEnded) req.resume();
  }
}

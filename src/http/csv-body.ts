/**
 * A CSV request body as a stream of decoded chunks, for large uploads that must not be buffered
 * whole: `text/csv` (also `application/csv`, `text/plain`), with any Content-Encoding the one
 * body reader speaks (request-body.ts counts the decompressed size and drains on any stop).
 */
import type { IncomingMessage } from 'node:http';
import { ValidationError } from '../lib/errors.js';
import { bodyChunks, contentEncodingOf } from './request-body.js';

const CSV_TYPES = new Set(['text/csv', 'application/csv', 'text/plain']);

/** Throws 415 (draining the body) unless the Content-Type and Content-Encoding are ones we read. */
export function assertCsvRequest(req: IncomingMessage): void {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!CSV_TYPES.has(type)) {
    req.resume();
    throw new ValidationError(415, `unsupported Content-Type '${type}': send the lookup table as text/csv`);
  }
  contentEncodingOf(req);
}

export function csvBody(req: IncomingMessage, maxBytes: number): AsyncGenerator<Buffer> {
  assertCsvRequest(req);
  return bodyChunks(req, { maxBytes, tooLarge: `Request Entity Too Large: the CSV is larger than ${maxBytes} bytes` });
}

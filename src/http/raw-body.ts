/**
 * Reads a request body as sent (still compressed) up to a byte limit, for handing to a worker
 * thread whole. The compressed size is capped at the decompressed limit: such a body can only
 * inflate past it, so it is refused with 413 before anything is inflated.
 */
import type { IncomingMessage } from 'node:http';
import { ValidationError } from '../lib/errors.js';

export type ContentEncoding = 'identity' | 'gzip';

/** The body's Content-Encoding, or 415 for one we do not speak. */
export function contentEncodingOf(req: IncomingMessage): ContentEncoding {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  if (encoding === 'identity' || encoding === '') return 'identity';
  throw new ValidationError(415, `unsupported Content-Encoding '${encoding}' (use gzip or none)`);
}

export function readRawBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(new ValidationError(413, 'Request Entity Too Large'));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (err: ValidationError) => {
      if (settled) return;
      settled = true;
      req.resume(); // drain the rest so the connection can answer
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > maxBytes) fail(new ValidationError(413, 'Request Entity Too Large'));
      else chunks.push(chunk);
    });
    req.on('aborted', () => fail(new ValidationError(400, 'request aborted')));
    req.on('error', () => fail(new ValidationError(400, 'could not read request body')));
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, size));
    });
  });
}

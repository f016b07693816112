/**
 * Reads a request body with limits enforced while it streams: the decompressed size is counted
 * as the gzip stream inflates, so a gzip bomb is cut off at the limit without being buffered.
 */
import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { ValidationError } from '../lib/errors.js';

export interface BodyLimits {
  /** Decompressed bytes allowed. */
  maxBytes: number;
}

export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (!['identity', 'gzip', 'x-gzip', ''].includes(encoding)) {
    return Promise.reject(new ValidationError(415, `unsupported Content-Encoding '${encoding}' (use gzip or none)`));
  }
  const gzipped = encoding === 'gzip' || encoding === 'x-gzip';
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (!gzipped && Number.isFinite(declared) && declared > limits.maxBytes) {
    req.resume();
    return Promise.reject(new ValidationError(413, 'Request Entity Too Large'));
  }

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const source: NodeJS.ReadableStream = gzipped ? req.pipe(zlib.createGunzip()) : req;
    const fail = (err: ValidationError) => {
      if (settled) return;
      settled = true;
      if (gzipped) (source as zlib.Gunzip).destroy();
      req.unpipe();
      req.resume(); // drain the rest so the connection can answer
      reject(err);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) {
        fail(new ValidationError(413, 'Request Entity Too Large'));
        return;
      }
      chunks.push(chunk);
    });
    source.on('error', () => fail(new ValidationError(400, gzipped ? 'body is not valid gzip (truncated or corrupt)' : 'could not read request body')));
    req.on('aborted', () => fail(new ValidationError(400, 'request aborted')));
    source.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, size));
    });
  });
}

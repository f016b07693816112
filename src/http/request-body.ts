/**
 * The one request-body reader of every surface. It owns what all of them share:
 *
 * - `Content-Encoding`: identity, gzip (`x-gzip`) or deflate; anything else is 415. This is the
 *   only place the header is parsed.
 * - Limits while the body streams: the DECOMPRESSED size is counted as it inflates, so a gzip
 *   bomb is cut off at the limit without being buffered; an identity body declaring a larger
 *   Content-Length is refused before a byte is read.
 * - Clean refusals: however reading stops (limit, corrupt gzip, a consumer that quits early), the
 *   rest of the request is drained so the error can still be answered on the same connection.
 *
 * Per-format parsers sit on top: JSON (`readJsonBody`), the ingestion payloads (ingest-payload.ts),
 * CSV chunks (csv-body.ts), a file on disk (`bodyToFile`), or the body as sent (`readSentBody`)
 * for a worker thread to inflate. Buffering is raw-body's (the library express's own parsers use).
 */
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import getRawBody from 'raw-body';
import { ValidationError } from '../lib/errors.js';

export type ContentEncoding = 'identity' | 'gzip' | 'deflate';

export interface BodyLimit {
  /** Decompressed bytes allowed (413 beyond). */
  maxBytes: number;
  /** The 413 message (default "Request Entity Too Large"). */
  tooLarge?: string;
}

/** The body's Content-Encoding, or 415 (the body drained) for one we do not speak. */
export function contentEncodingOf(req: IncomingMessage): ContentEncoding {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  if (encoding === 'deflate') return 'deflate';
  if (encoding === 'identity' || encoding === '') return 'identity';
  req.resume();
  throw new ValidationError(415, `unsupported Content-Encoding '${encoding}' (use gzip, deflate or none)`);
}

const tooLargeError = (limit: BodyLimit) => new ValidationError(413, limit.tooLarge ?? 'Request Entity Too Large');

function declaredLength(req: IncomingMessage): number | undefined {
  const n = Number(req.headers['content-length'] ?? NaN);
  return Number.isFinite(n) ? n : undefined;
}

/** Refuses (413, draining) an identity body that declares more than the limit. */
function refuseDeclaredTooLarge(req: IncomingMessage, encoding: ContentEncoding, limit: BodyLimit): void {
  const declared = declaredLength(req);
  if (encoding === 'identity' && declared !== undefined && declared > limit.maxBytes) {
    req.resume();
    throw tooLargeError(limit);
  }
}

/** The decoded byte stream of the request, and how to stop it and drain the rest. */
function decoded(req: IncomingMessage, encoding: ContentEncoding): { stream: Readable; stop: () => void } {
  if (encoding === 'identity') return { stream: req, stop: () => void (req.readableEnded || req.resume()) };
  const inflate = encoding === 'gzip' ? zlib.createGunzip() : zlib.createInflate();
  req.pipe(inflate);
  return {
    stream: inflate,
    stop: () => {
      req.unpipe(inflate);
      inflate.destroy();
      if (!req.readableEnded) req.resume();
    },
  };
}

function readFailure(err: unknown, encoding: ContentEncoding, limit: BodyLimit): ValidationError {
  if (err instanceof ValidationError) return err;
  const e = err as { type?: string };
  if (e?.type === 'entity.too.large') return tooLargeError(limit);
  if (e?.type === 'request.aborted') return new ValidationError(400, 'request aborted');
  return new ValidationError(400, encoding === 'identity' ? 'could not read request body' : `body is not valid ${encoding} (truncated or corrupt)`);
}

/** The whole decoded body, within the limit. */
export async function readBody(req: IncomingMessage, limit: BodyLimit): Promise<Buffer> {
  const encoding = contentEncodingOf(req);
  refuseDeclaredTooLarge(req, encoding, limit);
  const { stream, stop } = decoded(req, encoding);
  try {
    return await getRawBody(stream, { limit: limit.maxBytes });
  } catch (err) {
    stop();
    throw readFailure(err, encoding, limit);
  }
}

/**
 * The body as sent (still compressed), for a worker thread to inflate and parse. Its size is
 * capped at the decompressed limit: such a body can only inflate past it.
 */
export async function readSentBody(req: IncomingMessage, limit: BodyLimit): Promise<{ body: Buffer; encoding: ContentEncoding }> {
  const encoding = contentEncodingOf(req);
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit.maxBytes) {
    req.resume();
    throw tooLargeError(limit);
  }
  try {
    return { body: await getRawBody(req, { limit: limit.maxBytes }), encoding };
  } catch (err) {
    if (!req.readableEnded) req.resume();
    throw readFailure(err, 'identity', limit);
  }
}

/** The decoded body chunk by chunk, never buffered whole; throws 413 past the limit. */
export async function* bodyChunks(req: IncomingMessage, limit: BodyLimit): AsyncGenerator<Buffer> {
  const encoding = contentEncodingOf(req);
  refuseDeclaredTooLarge(req, encoding, limit);
  const { stream, stop } = decoded(req, encoding);
  // Iterating req itself must not destroy it on an early stop: we still have to answer.
  const source = stream.iterator({ destroyOnReturn: encoding !== 'identity' });
  let size = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit.maxBytes) throw tooLargeError(limit);
      yield chunk;
    }
  } catch (err) {
    throw readFailure(err, encoding, limit);
  } finally {
    stop();
  }
}

/**
 * A JSON body for the app API: 415 when it declares another media type (no Content-Type is
 * tolerated: curl -d without -H), 400 when it does not parse, `undefined` when empty (a route
 * decides whether it needs one).
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const type = req.headers['content-type'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody && type !== undefined && !/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    req.resume();
    throw new ValidationError(415, `unsupported Content-Type '${type.split(';')[0]}' (send application/json)`);
  }
  const text = (await readBody(req, { maxBytes })).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError(400, 'request body is not valid JSON');
  }
}

/**
 * Streams the body as sent to a new file, never holding more than a stream buffer; past the limit
 * the partial file is deleted and the caller gets 413. Returns the bytes written.
 */
export async function bodyToFile(req: IncomingMessage, file: string, limit: BodyLimit): Promise<number> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit.maxBytes) {
    req.resume();
    throw tooLargeError(limit);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const out = fs.createWriteStream(file, { flags: 'wx' });
  let size = 0;
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit.maxBytes) throw tooLargeError(limit);
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve, reject) => {
      out.once('error', reject);
      out.end(() => resolve());
    });
    return size;
  } catch (err) {
    out.destroy();
    fs.rmSync(file, { force: true });
    if (!req.readableEnded) req.resume();
    if (err instanceof ValidationError) throw err;
    if ((err as { code?: string })?.code?.startsWith('ERR_STREAM') || (err as { code?: string })?.code === 'ECONNRESET') throw new ValidationError(400, 'the upload was interrupted');
    throw err;
  }
}

/**
 * The one payload decoder of the four ingestion endpoints (/import, /track, /engage, /groups).
 */
import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { decodeDataParam, parseJsonRecords, parseNdjsonRecords } from '../domain/payload-text.js';
import { ValidationError } from '../lib/errors.js';
import { readBody } from './request-body.js';
import { checkLegacyDelivery } from './legacy-answer.js';
import { queryOf } from './query-of.js';

export interface IngestPayloadLimits {
  /** Decompressed body bytes allowed (413 beyond; enforced while inflating gzip). */
  maxBytes: number;
  /** Records allowed in one request (400 beyond, as Mixpanel answers). */
  maxRecords: number;
}

export interface IngestPayload {
  /** The records as sent; each is validated on its own later (a non-object is a per-record error). */
  records: unknown[];
  /** Sent in the SDK form (`GET ?data=` or form-urlencoded `data=`): answer `1`/`0` or `{status,error}`. */
  legacy: boolean;
  /** `verbose=1` in the query (or form): the legacy answer is `{"status":1|0,"error":…}`. */
  verbose: boolean;
}

const NDJSON_TYPES = new Set(['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/jsonlines']);
const JSON_TYPES = new Set(['application/json', 'text/json']);
const FORM_TYPE = 'application/x-www-form-urlencoded';

function mediaType(req: IncomingMessage): string {
  return String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

const truthy = (v: string | null | undefined) => v === '1' || v === 'true';

/**
 * What a POST body holds, by Content-Type: JSON (also `text/plain` or none), NDJSON, or the
 * legacy form. 415 for anything else (the rest of the body is drained).
 */
export function bodyKindOf(req: IncomingMessage): 'json' | 'ndjson' | 'form' {
  const type = mediaType(req);
  if (type === FORM_TYPE) return 'form';
  if (NDJSON_TYPES.has(type)) return 'ndjson';
  if (type === '' || type === 'text/plain' || JSON_TYPES.has(type)) return 'json';
  req.resume();
  throw new ValidationError(415, `unsupported Content-Type '${type}': send application/json, application/x-ndjson or application/x-www-form-urlencoded`);
}

const DATA_FIELD = Buffer.from('data=');

/** A text/plain (or untyped) body that is really `data=…`, as mixpanel-browser's sendBeacon sends. */
function isBeaconForm(body: Buffer): boolean {
  return body.length >= DATA_FIELD.length && body.subarray(0, DATA_FIELD.length).equals(DATA_FIELD);
}

/** GET `?data=` or a form-urlencoded POST: what the official SDKs send. */
export function isLegacyRequest(req: IncomingMessage): boolean {
  return req.method === 'GET' || req.method === 'HEAD' || mediaType(req) === FORM_TYPE;
}

/** `verbose=1` in the query string. */
export function verboseRequested(req: IncomingMessage): boolean {
  return truthy(queryOf(req).get('verbose'));
}

/**
 * Marks the response of a legacy request: answers in the legacy shape (`1`/`0`, or
 * `{status,error}` with verbose) from here on, including errors. Idempotent; a no-op for JSON.
 */
export function markLegacy(req: IncomingMessage, res: Response | undefined): { legacy: boolean; verbose: boolean } {
  const legacy = isLegacyRequest(req);
  const verbose = verboseRequested(req);
  if (legacy && res) {
    res.locals.surface = 'legacy';
    res.locals.verbose = verbose;
    checkLegacyDelivery(req);
  }
  return { legacy, verbose };
}

/**
 * Reads and decodes an ingestion payload in any of the forms Mixpanel clients send:
 *
 * - `POST` `application/json` (also `text/plain` or no Content-Type): a JSON array of records,
 *   or one JSON object (= one record);
 * - `POST` `application/x-ndjson` (also `application/jsonl`): one JSON record per line;
 * - `POST` `application/x-www-form-urlencoded` with `data=<base64 of JSON>` (or plain JSON in
 *   `data`), as the official SDKs send batches — `verbose` may also be a form field; the same
 *   form labelled `text/plain` (what `navigator.sendBeacon` sends) is read as the form too;
 * - `GET ?data=<base64 of JSON>`, as the official SDKs send single calls;
 * - any POST body may be `Content-Encoding: gzip`; the size limit applies to the inflated bytes
 *   and is enforced while inflating (a gzip bomb is cut off, never buffered).
 *
 * Query parameters `verbose=1` selects the verbose legacy answer; `ip`, `test` and `callback`
 * are accepted and ignored here (routes may read them from `req.query`).
 *
 * A legacy request (GET or form) switches `res.locals.surface` to `'legacy'` and sets
 * `res.locals.verbose`, so that every later error, too, is answered `0` or `{status:0,error}`
 * (HTTP status unchanged).
 *
 * Errors (thrown as ValidationError, answered in the surface's shape by the error middleware):
 * 400 malformed JSON/NDJSON/base64, empty body, missing `data`, a payload that is neither an
 * array nor an object, more than `maxRecords` records, corrupt or truncated gzip;
 * 413 more than `maxBytes` (decompressed); 415 unsupported Content-Type or Content-Encoding.
 * The records themselves are NOT validated: a non-object element is returned as is and becomes
 * a per-record error in the write path.
 */
export async function readIngestPayload(req: IncomingMessage, limits: IngestPayloadLimits): Promise<IngestPayload> {
  const res = (req as IncomingMessage & { res?: Response }).res;
  const { legacy, verbose } = markLegacy(req, res);

  if (req.method === 'GET' || req.method === 'HEAD') {
    const data = queryOf(req).get('data');
    if (data === null) throw new ValidationError(400, "missing 'data' query parameter (base64-encoded JSON)");
    return { records: decodeDataParam(data, limits.maxRecords), legacy, verbose };
  }

  let kind = bodyKindOf(req);
  const body = await readBody(req, { maxBytes: limits.maxBytes });
  if (kind === 'json' && isBeaconForm(body)) {
    // navigator.sendBeacon(url, 'data=…') can only label a string body text/plain: it is the form.
    kind = 'form';
    if (res) res.locals.surface = 'legacy';
  }

  if (kind === 'form') {
    const form = new URLSearchParams(body.toString('utf8'));
    const formVerbose = verbose || truthy(form.get('verbose'));
    if (formVerbose && res) res.locals.verbose = true;
    const data = form.get('data');
    if (data === null) throw new ValidationError(400, "missing 'data' form field (base64-encoded JSON)");
    return { records: decodeDataParam(data, limits.maxRecords), legacy, verbose: formVerbose };
  }
  const text = body.toString('utf8');
  if (kind === 'ndjson') return { records: parseNdjsonRecords(text, limits.maxRecords), legacy, verbose };
  return { records: parseJsonRecords(text, limits.maxRecords), legacy, verbose };
}

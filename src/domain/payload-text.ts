/**
 * Turning the text of an ingestion payload into records: a JSON array (or one object), NDJSON,
 * or the legacy `data=` value (base64 of JSON, or plain JSON). Pure, so it can also run on a
 * worker thread. Bad text throws a ValidationError(400) whose message says what was wrong;
 * records themselves are not validated here (that is per record, in event-record.ts).
 */
import { ValidationError } from '../lib/errors.js';

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function tooMany(count: number, maxRecords: number): ValidationError {
  return new ValidationError(400, `too many records in one request: ${count} (the limit is ${maxRecords})`);
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** A parsed JSON payload as a list of records: an array as is, one object as a list of one. */
export function recordsOf(value: unknown, maxRecords: number, what = 'body'): unknown[] {
  if (Array.isArray(value)) {
    if (value.length > maxRecords) throw tooMany(value.length, maxRecords);
    return value;
  }
  if (typeof value === 'object' && value !== null) return [value];
  throw new ValidationError(400, `${what} must be a JSON array of records or a single JSON object`);
}

/** A JSON document: an array of records or one record. */
export function parseJsonRecords(text: string, maxRecords: number, what = 'body'): unknown[] {
  const body = stripBom(text).trim();
  if (body === '') throw new ValidationError(400, `${what} is empty`);
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw new ValidationError(400, `${what} is not valid JSON: ${(err as Error).message}`);
  }
  return recordsOf(value, maxRecords, what);
}

/** Newline-delimited JSON: one record per non-blank line. */
export function parseNdjsonRecords(text: string, maxRecords: number): unknown[] {
  const records: unknown[] = [];
  const lines = stripBom(text).split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    if (records.length === maxRecords) {
      throw tooMany(lines.slice(i).filter((l) => l.trim() !== '').length + records.length, maxRecords);
    }
    try {
      records.push(JSON.parse(line));
    } catch (err) {
      throw new ValidationError(400, `NDJSON line ${i + 1} is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (records.length === 0) throw new ValidationError(400, 'body is empty: NDJSON needs one JSON record per line');
  return records;
}

/**
 * The legacy `data` value: base64 (standard or URL-safe) of a JSON document, or the JSON itself
 * (Mixpanel accepts both). A form body the client did not percent-encode turns base64 '+' into
 * spaces; base64 has no spaces, so they are put back.
 */
export function decodeDataParam(data: string, maxRecords: number): unknown[] {
  const value = stripBom(data).trim();
  if (value === '') throw new ValidationError(400, "'data' is empty");
  if (value.startsWith('[') || value.startsWith('{')) return parseJsonRecords(value, maxRecords, "'data'");
  const b64 = value.replace(/ /g, '+').replace(/[\r\n\t]/g, '');
  if (!BASE64.test(b64)) throw new ValidationError(400, "'data' is neither base64-encoded JSON nor JSON");
  const decoded = Buffer.from(b64, 'base64').toString('utf8');
  return parseJsonRecords(decoded, maxRecords, "'data' (base64-decoded)");
}

/**
 * How a batch-import upload declares what it is. Pure.
 *
 * - `type` (query): `events` | `people` | `groups` — what the records are. Required.
 * - Format: the `format` query parameter (`ndjson` | `json` | `csv`) wins; otherwise the
 *   Content-Type: `application/x-ndjson`, `application/ndjson`, `application/jsonl`,
 *   `application/x-jsonlines` → ndjson; `application/json` → json (a JSON array); `text/csv` → csv.
 * - Compression: gzip when `Content-Encoding: gzip`, when the Content-Type is
 *   `application/gzip` (then `format` is required), or when the body starts with the gzip magic
 *   bytes — so `curl --data-binary @events.ndjson.gz` just works. The file is stored as sent.
 */
import { ownValue } from '../lib/own.js';
export type BatchType = 'events' | 'people' | 'groups';
export type BatchFormat = 'ndjson' | 'json' | 'csv';

export const BATCH_TYPES: readonly BatchType[] = ['events', 'people', 'groups'];
export const BATCH_FORMATS: readonly BatchFormat[] = ['ndjson', 'json', 'csv'];

export type Negotiated =
  | { ok: true; type: BatchType; format: BatchFormat; declaredGzip: boolean }
  | { ok: false; status: 400 | 415; message: string };

const BY_MEDIA_TYPE: Record<string, BatchFormat> = {
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/x-jsonlines': 'ndjson',
  'application/json': 'json',
  'text/csv': 'csv',
};
const GZIP_TYPES = new Set(['application/gzip', 'application/x-gzip']);

export interface UploadDeclaration {
  type: unknown;
  format: unknown;
  contentType: string | undefined;
  contentEncoding: string | undefined;
}

export function negotiateBatchUpload(d: UploadDeclaration): Negotiated {
  if (typeof d.type !== 'string' || !BATCH_TYPES.includes(d.type as BatchType)) {
    return { ok: false, status: 400, message: `query parameter 'type' must be one of ${BATCH_TYPES.join(', ')}` };
  }
  const encoding = (d.contentEncoding ?? '').trim().toLowerCase();
  if (!['', 'identity', 'gzip', 'x-gzip'].includes(encoding)) {
    return { ok: false, status: 415, message: `unsupported Content-Encoding '${encoding}' (use gzip or none)` };
  }
  const media = (d.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  let declaredGzip = encoding === 'gzip' || encoding === 'x-gzip' || GZIP_TYPES.has(media);

  let format: BatchFormat | undefined;
  if (d.format !== undefined) {
    if (typeof d.format !== 'string' || !BATCH_FORMATS.includes(d.format as BatchFormat)) {
      return { ok: false, status: 400, message: `query parameter 'format' must be one of ${BATCH_FORMATS.join(', ')}` };
    }
    format = d.format as BatchFormat;
  } else {
    format = ownValue(BY_MEDIA_TYPE, media);
  }
  if (!format) {
    const hint = GZIP_TYPES.has(media) ? ` with Content-Type ${media}, say which with ?format=` : '';
    return {
      ok: false,
      status: 415,
      message: `cannot tell the file format${hint}: send Content-Type application/x-ndjson, application/json or text/csv, or ?format=ndjson|json|csv`,
    };
  }
  if (GZIP_TYPES.has(media)) declaredGzip = true;
  return { ok: true, type: d.type as BatchType, format, declaredGzip };
}

/** The first two bytes of every gzip stream. */
export function looksGzipped(head: Buffer): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/**
 * The answers of the event ingestion endpoints. JSON requests get
 * `{code,num_records_imported,status}` (strict failures: 400 with `failed_records`); the legacy
 * SDK forms get `1`/`0`, or `{status,error}` with verbose=1. Duplicates of stored events count
 * as imported, as on Mixpanel, so a replay answers exactly like the first send.
 */
import type { Response } from 'express';
import type { RecordRejection } from '../domain/event-record.js';
import { sendLegacyAnswer } from './legacy-answer.js';

export const STRICT_FAILURE = 'some data points in the request failed validation';

export interface IngestAnswer {
  /** Valid records, stored now or already stored before (duplicates). */
  accepted: number;
  rejected: readonly RecordRejection[];
  /** Report rejections as a 400 (strict /import, and /track always). */
  strict: boolean;
  legacy: boolean;
  verbose: boolean;
}

/** A short human summary of the first rejections, for the legacy `error` text. */
export function summarise(rejected: readonly RecordRejection[], max = 3): string {
  const shown = rejected.slice(0, max).map((r) => `record ${r.index}: ${r.message}`);
  const more = rejected.length > max ? `; and ${rejected.length - max} more` : '';
  return `${rejected.length} record(s) failed validation: ${shown.join('; ')}${more}`;
}

export function sendIngestAnswer(res: Response, a: IngestAnswer): void {
  const failed = a.strict && a.rejected.length > 0;
  // Non-strict drops are counted where an operator and the client can see them.
  if (a.rejected.length > 0) res.setHeader('X-Records-Rejected', String(a.rejected.length));
  if (a.legacy) {
    if (failed) sendLegacyAnswer(res, 400, { status: 0, error: summarise(a.rejected), num_records_imported: a.accepted, failed_records: a.rejected }, a.verbose);
    else sendLegacyAnswer(res, 200, { status: 1, error: null }, a.verbose);
    return;
  }
  if (failed) {
    res.status(400).json({
      code: 400,
      error: STRICT_FAILURE,
      status: 'Bad Request',
      num_records_imported: a.accepted,
      failed_records: a.rejected,
    });
    return;
  }
  res.status(200).json({ code: 200, num_records_imported: a.accepted, status: 'OK' });
}

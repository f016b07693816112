/**
 * `GET|POST /engage` (user profiles) and `GET|POST /groups` (group profiles).
 * Bodies in every form readIngestPayload knows (JSON array, NDJSON, gzip, form `data=`, GET
 * `?data=`); always answered in the legacy shape: `1`/`0`, or `{status,error}` with verbose=1.
 *
 * A request is all-or-nothing: if any update is invalid, the transaction is rolled back and the
 * answer is `0` (400) naming the failing updates. Profile updates are not idempotent (`$add`,
 * `$append`), and the `1`/`0` answer cannot say which ones were applied, so only this makes a
 * client's retry after `0` safe.
 */
import type { Express, Request, Response } from 'express';
import type { Db, DbOrTrx } from '../../db/knex.js';
import { applyGroupUpdates, applyProfileUpdates, type ProfileUpdateResult } from '../../ingest/profiles.ingest.js';
import type { AppDeps } from '../deps.js';
import { PROFILE_TOKEN, tokenProject } from '../ingest-auth.js';
import { markLegacy, readIngestPayload } from '../ingest-payload.js';
import { sendLegacyAnswer } from '../legacy-answer.js';
import { rateLimiterOf } from '../rate-limit.js';
import { surface } from '../surface.js';
import { methodNotAllowed } from '../method-not-allowed.js';

type Apply = (db: DbOrTrx, projectId: number, updates: readonly unknown[]) => Promise<ProfileUpdateResult>;

/** Thrown inside the transaction to roll it back; carries the rejections out. */
class Rejected extends Error {
  constructor(readonly result: ProfileUpdateResult) {
    super('profile updates rejected');
  }
}

function summary(result: ProfileUpdateResult, max = 3): string {
  const shown = result.rejected.slice(0, max).map((r) => `update ${r.index}: ${r.message}`);
  const more = result.rejected.length > max ? `; and ${result.rejected.length - max} more` : '';
  return `${result.rejected.length} of ${result.received} update(s) failed validation, none were applied: ${shown.join('; ')}${more}`;
}

/** Applies every update or none. */
async function applyAll(db: Db, projectId: number, updates: readonly unknown[], apply: Apply): Promise<ProfileUpdateResult> {
  try {
    return await db.transaction(async (trx) => {
      const result = await apply(trx, projectId, updates);
      if (result.rejected.length > 0) throw new Rejected(result);
      return result;
    });
  } catch (err) {
    if (err instanceof Rejected) return { ...err.result, applied: 0 };
    throw err;
  }
}

export function mountProfiles(app: Express, deps: AppDeps): void {
  const limiter = rateLimiterOf(deps);

  const handler = (apply: Apply) => async (req: Request, res: Response) => {
    markLegacy(req, res);
    res.locals.verbose = res.locals.verbose || req.query.verbose === '1' || req.query.verbose === 'true';
    // With credentials, check them before reading the body (no work for strangers).
    if (req.headers.authorization) await tokenProject(deps, req, [], PROFILE_TOKEN);
    const payload = await readIngestPayload(req, { maxBytes: deps.config.IMPORT_MAX_BYTES, maxRecords: deps.config.ENGAGE_MAX_UPDATES });
    const project = await tokenProject(deps, req, payload.records, PROFILE_TOKEN);
    limiter.consume(project.id, payload.records.length);
    const result = await applyAll(deps.db, project.id, payload.records, apply);
    const verbose = payload.verbose || Boolean(res.locals.verbose);
    if (result.rejected.length === 0) {
      sendLegacyAnswer(res, 200, { status: 1, error: null }, verbose);
      return;
    }
    res.setHeader('X-Records-Rejected', String(result.rejected.length));
    sendLegacyAnswer(res, 400, { status: 0, error: summary(result), failed_records: result.rejected }, verbose);
  };

  const engage = handler(applyProfileUpdates);
  const groups = handler(applyGroupUpdates);
  app.post('/engage', surface('legacy'), engage);
  app.get('/engage', surface('legacy'), engage);
  app.post('/groups', surface('legacy'), groups);
  app.get('/groups', surface('legacy'), groups);
  app.all(['/engage', '/groups'], surface('legacy'), methodNotAllowed(['GET', 'POST']));
}

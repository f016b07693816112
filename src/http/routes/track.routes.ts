/**
 * `GET|POST /track`: client-side tracking, authenticated by the project token in
 * the records (or Basic credentials). Same record shape and write path as /import; events older
 * than 5 days or more than an hour in the future are refused per record. Always answered in the
 * legacy shape: `1`/`0`, or `{status,error}` with verbose=1. CORS: client-cors.ts.
 */
import type { Express, Request, Response } from 'express';
import { withTrackDefaults } from '../../domain/track-defaults.js';
import { ingestEvents } from '../../ingest/events.ingest.js';
import type { AppDeps } from '../deps.js';
import { TRACK_TOKEN, tokenProject } from '../ingest-auth.js';
import { readIngestPayload, verboseRequested } from '../ingest-payload.js';
import { sendIngestAnswer } from '../ingest-response.js';
import { checkLegacyDelivery } from '../legacy-answer.js';
import { rateLimiterOf } from '../rate-limit.js';
import { surface } from '../surface.js';
import { eventLimitsOf } from './ingest-options.js';
import { methodNotAllowed } from '../method-not-allowed.js';

export const TRACK_MAX_AGE_MS = 5 * 24 * 60 * 60 * 1000;

export function mountTrack(app: Express, deps: AppDeps): void {
  const limiter = rateLimiterOf(deps);
  const limits = eventLimitsOf(deps.config);

  const handle = async (req: Request, res: Response) => {
    res.locals.verbose = verboseRequested(req);
    checkLegacyDelivery(req);
    const payload = await readIngestPayload(req, { maxBytes: deps.config.IMPORT_MAX_BYTES, maxRecords: deps.config.IMPORT_MAX_EVENTS });
    const project = await tokenProject(deps, req, payload.records, TRACK_TOKEN);
    limiter.consume(project.id, payload.records.length);
    const now = Date.now();
    const records = payload.records.map((r) => withTrackDefaults(r, now));
    const result = await ingestEvents(deps.events, project.id, 'track', records, { strict: true, maxAgeMs: TRACK_MAX_AGE_MS, limits, now, idMerge: project.idMerge });
    sendIngestAnswer(res, {
      accepted: result.imported + result.deduplicated,
      rejected: result.rejected,
      strict: true,
      legacy: true,
      verbose: payload.verbose,
    });
  };

  app.post('/track', surface('legacy'), handle);
  app.get('/track', surface('legacy'), handle);
  app.all('/track', surface('legacy'), methodNotAllowed(['GET', 'POST']));
}

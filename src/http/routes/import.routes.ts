/**
 * `POST|GET /import?project_id=&strict=1` (CONTRACT §2.1): historical event import. Order:
 * credentials (401/403/400 residency) → payload (400/413/415) → rate limit (429) → the single
 * write path. The answer is sent after the transaction commits, so a 200 means stored.
 */
import type { Express, Request, Response } from 'express';
import { ingestEvents } from '../../ingest/events.ingest.js';
import type { AppDeps } from '../deps.js';
import { writeAccess } from '../ingest-auth.js';
import { markLegacy, readIngestPayload } from '../ingest-payload.js';
import { sendIngestAnswer } from '../ingest-response.js';
import { rateLimiterOf } from '../rate-limit.js';
import { surface } from '../surface.js';
import { eventLimitsOf, flag } from './ingest-options.js';

export function mountImport(app: Express, deps: AppDeps): void {
  const limiter = rateLimiterOf(deps);
  const limits = eventLimitsOf(deps.config);

  const handle = async (req: Request, res: Response) => {
    markLegacy(req, res);
    const { project } = await writeAccess(deps, req);
    const payload = await readIngestPayload(req, { maxBytes: deps.config.IMPORT_MAX_BYTES, maxRecords: deps.config.IMPORT_MAX_EVENTS });
    limiter.consume(project.id, payload.records.length);
    const strict = flag(req.query.strict);
    const result = await ingestEvents(deps.db, project.id, 'import', payload.records, { strict, limits });
    sendIngestAnswer(res, {
      accepted: result.imported + result.deduplicated,
      rejected: result.rejected,
      strict,
      legacy: payload.legacy,
      verbose: payload.verbose,
    });
  };

  app.post('/import', surface('ingest'), handle);
  app.get('/import', surface('ingest'), handle);
}

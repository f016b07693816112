/**
 * `POST|GET /import?project_id=&strict=1`: historical event import. Order:
 * credentials (401/403/400 residency) → payload (400/413/415) → rate limit (429) → the single
 * write path. The answer is sent after the transaction commits, so a 200 means stored.
 *
 * JSON and NDJSON bodies take the fast path: the body is read as sent, and inflating, parsing,
 * validating and serialising run on the ingest worker pool (inline for small bodies), so this
 * thread mostly runs the inserts. The legacy SDK forms (GET, form POST) are small and go
 * through the shared payload decoder.
 */
import type { Express, Request, Response } from 'express';
import type { Project } from '../../db/accounts.repo.js';
import { prepareEventBatch, type PrepareInput, type PreparedBatch } from '../../ingest/events-prepare.js';
import { ingestEvents, storeEventRows } from '../../ingest/events.ingest.js';
import type { AppDeps } from '../deps.js';
import { writeAccess } from '../ingest-auth.js';
import { bodyKindOf, isLegacyRequest, markLegacy, readIngestPayload } from '../ingest-payload.js';
import { sendIngestAnswer } from '../ingest-response.js';
import { importWorkerCount, ingestWorkerPool } from '../../ingest/ingest-workers.js';
import { rateLimiterOf } from '../rate-limit.js';
import { readSentBody } from '../request-body.js';
import { surface } from '../surface.js';
import { eventLimitsOf, flag } from './ingest-options.js';
import { methodNotAllowed } from '../method-not-allowed.js';

export function mountImport(app: Express, deps: AppDeps): void {
  const { config } = deps;
  const limiter = rateLimiterOf(deps);
  const limits = eventLimitsOf(config);
  const pool = ingestWorkerPool(importWorkerCount(config, deps.events));
  const payloadLimits = { maxBytes: config.IMPORT_MAX_BYTES, maxRecords: config.IMPORT_MAX_EVENTS };

  const legacy = async (req: Request, res: Response, project: Project, strict: boolean) => {
    const projectId = project.id;
    const payload = await readIngestPayload(req, payloadLimits);
    limiter.consume(projectId, payload.records.length);
    const result = await ingestEvents(deps.events, projectId, 'import', payload.records, { strict, limits, idMerge: project.idMerge });
    sendIngestAnswer(res, { accepted: result.imported + result.deduplicated, rejected: result.rejected, strict, legacy: true, verbose: payload.verbose });
  };

  const json = async (req: Request, res: Response, project: Project, strict: boolean) => {
    const projectId = project.id;
    const kind = bodyKindOf(req);
    const { body, encoding } = await readSentBody(req, payloadLimits);
    const now = Date.now();
    const input: PrepareInput = { body, gzip: encoding === 'gzip', deflate: encoding === 'deflate', ndjson: kind === 'ndjson', ...payloadLimits, validate: { strict, limits, now, idMerge: project.idMerge }, encoding: deps.events.rowEncoding };
    const prepared: PreparedBatch = body.length >= config.INGEST_WORKER_MIN_BYTES ? await pool.prepare(input) : prepareEventBatch(input);
    limiter.consume(projectId, prepared.received);
    const stored = await storeEventRows(deps.events, projectId, 'import', prepared.rows, now);
    sendIngestAnswer(res, { accepted: stored.imported + stored.deduplicated, rejected: prepared.rejected, strict, legacy: false, verbose: false });
  };

  const handle = async (req: Request, res: Response) => {
    markLegacy(req, res);
    const { project } = await writeAccess(deps, req);
    const strict = flag(req.query.strict);
    if (isLegacyRequest(req)) await legacy(req, res, project, strict);
    else await json(req, res, project, strict);
  };

  app.post('/import', surface('ingest'), handle);
  app.get('/import', surface('ingest'), handle);
  app.all('/import', surface('ingest'), methodNotAllowed(['GET', 'POST']));
}

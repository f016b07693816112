/**
 * `GET /api/2.0/export`: stored events as JSONL, streamed page by page in event
 * time order. Everything is validated before the first byte; after that a failure can only cut
 * the stream (the connection is destroyed, so a client never mistakes a partial file for a
 * whole one). See docs/read-back.md.
 */
import express, { type Express, type Request, type Response } from 'express';
import { accessOf } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { acceptsGzip, TextStreamWriter } from '../text-stream.js';
import { requireReadAccess, withRequestInErrors } from '../read-back-access.js';
import { dateRange, integer, stringArray, whereExpression, type Params } from '../read-back-params.js';
import { surface } from '../surface.js';
import { scanEvents } from '../../readback/event-scan.js';

/** Mixpanel's cap on `limit`. */
export const EXPORT_MAX_LIMIT = 100_000;

export function mountExport(app: Express, deps: AppDeps): void {
  const router = express.Router();
  router.use(surface('ingest'));

  router.get('/', requireReadAccess(deps, (req) => req.query.project_id), async (req: Request, res: Response) => {
    const { project } = accessOf(res);
    const params = req.query as Params;
    const range = dateRange(params);
    const events = stringArray(params, 'event');
    const where = whereExpression(params);
    const limit = integer(params, 'limit', { min: 1, max: EXPORT_MAX_LIMIT });

    const abort = new AbortController();
    res.once('close', () => abort.abort());
    res.status(200);
    // Mixpanel answers text/plain; a client that asks for NDJSON by name gets that type.
    const ndjson = /application\/(x-)?ndjson/.test(req.headers.accept ?? '');
    res.setHeader('content-type', ndjson ? 'application/x-ndjson' : 'text/plain; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    const writer = new TextStreamWriter(res, {
      gzip: acceptsGzip(req),
      onError: (err) => deps.log.warn({ err, reqId: res.locals.reqId }, 'export stream ended early'),
    });

    for await (const page of scanEvents(deps.db, deps.events, {
      projectId: project.id,
      fromMs: range.fromMs,
      toMs: range.toMs,
      events,
      where,
      limit,
      purpose: 'export',
      signal: abort.signal,
    })) {
      let chunk = '';
      for (const e of page) {
        // The export shows who did it: the resolved id (a linked device's user; docs/identity.md).
        // `where` matched the distinct_id as stored, as every store and report filter does.
        e.record.properties.distinct_id = e.resolvedId;
        chunk += `${JSON.stringify(e.record)}\n`;
      }
      await writer.write(chunk);
      if (writer.gone) return;
    }
    writer.end();
  });

  router.use(withRequestInErrors);
  // Mounted on its own path so the surface mark and the error decorator touch nothing else.
  app.use('/api/2.0/export', router);
}

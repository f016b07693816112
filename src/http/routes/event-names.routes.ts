/**
 * `GET /api/2.0/events/names` (also `/api/query/events/names`): the event catalog — names of
 * events whose event time falls in the last 30 days, most frequent first, as a JSON
 * array. Older events never appear here, though export and insights still find them.
 */
import express, { type Express, type Request, type Response } from 'express';
import { DAY_MS } from '../../domain/time-buckets.js';
import { accessOf } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { requireReadAccess, withRequestInErrors } from '../read-back-access.js';
import { integer, typeParam, type Params } from '../read-back-params.js';
import { surface } from '../surface.js';

/** Events whose event time is older than this are not in the catalog. */
export const CATALOG_WINDOW_MS = 30 * DAY_MS;

export function mountEventNames(app: Express, deps: AppDeps): void {
  const router = express.Router();
  router.use(surface('ingest'));
  router.get('/', requireReadAccess(deps, (req) => req.query.project_id), async (req: Request, res: Response) => {
    const { project } = accessOf(res);
    const params = req.query as Params;
    // The catalog is the same whatever the count type; accept Mixpanel's values.
    typeParam(params, ['general', 'unique', 'average']);
    const limit = integer(params, 'limit', { min: 1, max: 10_000, default: 255 })!;
    const names = await deps.events.eventNames(project.id, Date.now() - CATALOG_WINDOW_MS, limit);
    res.json(names.map((n) => n.event));
  });
  router.use(withRequestInErrors);
  app.use('/api/2.0/events/names', router);
  app.use('/api/query/events/names', router);
}

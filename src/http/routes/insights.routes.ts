/**
 * The insights report over HTTP, on two surfaces:
 * - `GET /api/app/projects/{pid}/insights` (app API): `{status:"ok", computed_at, from_date,
 *   to_date, unit, results:{series, values}, legend_size}`, errors `{status:"error", …}`;
 * - `GET /api/2.0/segmentation` (also `/api/query/segmentation`), Mixpanel's shape
 *   `{data:{series, values}, legend_size}`, errors `{code, error, status, request}`.
 * Parameters: event (name or JSON array; absent: all), from_date, to_date (required, inclusive
 * UTC days), unit (minute|hour|day|week|month, default day), on, where, limit (rows, default 60).
 */
import express, { type Express, type Request, type Response } from 'express';
import { TooManySegmentsError } from '../../domain/segmentation.js';
import { bucketCount, DAY_MS } from '../../domain/time-buckets.js';
import { ValidationError } from '../../lib/errors.js';
import { runInsights, type InsightsResult } from '../../readback/insights.js';
import { accessOf } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { requireReadAccess, withRequestInErrors } from '../read-back-access.js';
import { dateRange, integer, onExpression, stringArray, typeParam, unitParam, whereExpression, type Params } from '../read-back-params.js';
import { surface } from '../surface.js';

/** Buckets a report may span (e.g. about 7 days by minute, 416 days by hour). */
export const MAX_BUCKETS = 10_000;

async function compute(deps: AppDeps, req: Request, res: Response) {
  const { project } = accessOf(res);
  const params = req.query as Params;
  const range = dateRange(params);
  const days = Math.round((range.toMs - range.fromMs) / DAY_MS);
  if (days > deps.config.QUERY_MAX_RANGE_DAYS) {
    throw new ValidationError(400, `the range from_date..to_date spans ${days} days; at most ${deps.config.QUERY_MAX_RANGE_DAYS} are allowed (QUERY_MAX_RANGE_DAYS)`);
  }
  const unit = unitParam(params);
  if (bucketCount(range, unit) > MAX_BUCKETS) {
    throw new ValidationError(400, `the range spans more than ${MAX_BUCKETS} ${unit} buckets; use a larger unit or a shorter range`);
  }
  const type = typeParam(params);
  const events = stringArray(params, 'event', { allowBareName: true });
  const where = whereExpression(params);
  const on = onExpression(params);
  const limit = integer(params, 'limit', { min: 1, max: 10_000, default: 60 })!;
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  try {
    const result = await runInsights(deps.db, deps.events, { projectId: project.id, range, unit, type, events, where, on, limit, signal: abort.signal });
    return { range, unit, result };
  } catch (err) {
    if (err instanceof TooManySegmentsError) throw new ValidationError(400, err.message);
    throw err;
  }
}

function valuesOf(result: InsightsResult) {
  return { series: result.series, values: result.values };
}

export function mountInsights(app: Express, deps: AppDeps): void {
  app.get(
    '/api/app/projects/:pid/insights',
    surface('app'),
    requireReadAccess(deps, (req) => req.params.pid),
    async (req: Request, res: Response) => {
      const { range, unit, result } = await compute(deps, req, res);
      res.json({
        status: 'ok',
        computed_at: new Date().toISOString(),
        from_date: range.fromDate,
        to_date: range.toDate,
        unit,
        results: valuesOf(result),
        legend_size: result.legendSize,
      });
    },
  );

  const mixpanel = express.Router();
  mixpanel.use(surface('ingest'));
  mixpanel.get('/', requireReadAccess(deps, (req) => req.query.project_id), async (req: Request, res: Response) => {
    const { result } = await compute(deps, req, res);
    res.json({ data: valuesOf(result), legend_size: result.legendSize });
  });
  mixpanel.use(withRequestInErrors);
  app.use('/api/2.0/segmentation', mixpanel);
  app.use('/api/query/segmentation', mixpanel);
}

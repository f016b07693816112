/**
 * The experiments API under /api/app/workspaces/{workspace_id}/experiments, and its
 * OpenAPI document at /api/app/openapi.json. Handlers only authenticate, parse and answer; the
 * operations are in src/experiments.
 */
import express, { type Express, type Request, type Response } from 'express';
import type { z } from 'zod';
import {
  createExperimentInput,
  decideInput,
  describeIssues,
  emptyInput,
  unstorableTextAt,
  updateExperimentInput,
} from '../../domain/experiment-input.js';
import { isExperimentAction } from '../../domain/experiment-state.js';
import {
  applyAction,
  createExperiment,
  deleteExperiment,
  getExperiment,
  listExperimentPages,
  updateExperiment,
} from '../../experiments/experiments.service.js';
import { ValidationError } from '../../lib/errors.js';
import type { AppDeps } from '../deps.js';
import { experimentScopeOf } from '../experiments-access.js';
import { sendJsonPages } from '../json-pages.js';
import { readJsonBody } from '../request-body.js';
import { servedExperimentsOpenApi } from '../openapi/experiments.openapi.js';
import { surface } from '../surface.js';

export function mountExperiments(app: Express, deps: AppDeps): void {
  const maxBytes = deps.config.EXPERIMENTS_MAX_BODY_BYTES;

  /** Parses the body against `schema`; an absent body counts as `emptyAs` (or is refused). */
  async function bodyOf<T>(req: Request, schema: z.ZodType<T>, emptyAs?: unknown): Promise<T> {
    const raw = await readJsonBody(req, maxBytes);
    if (raw === undefined && emptyAs === undefined) throw new ValidationError(400, 'request body must be a JSON object');
    const bad = unstorableTextAt(raw);
    if (bad !== undefined) throw new ValidationError(400, `'${bad}': contains a NUL character or an unpaired surrogate`);
    const parsed = schema.safeParse(raw ?? emptyAs);
    if (!parsed.success) throw new ValidationError(400, describeIssues(parsed.error));
    return parsed.data;
  }

  const scope = (req: Request) => experimentScopeOf(req, deps);
  const ok = (res: Response, results: unknown, status = 200) => res.status(status).json({ status: 'ok', results });
  const idOf = (req: Request) => String(req.params.experiment_id);

  const router = express.Router({ mergeParams: true });
  router.use(surface('app'));

  // Streamed a page at a time: a workspace of any size costs one page of memory.
  router.get('/', async (req, res) => {
    await sendJsonPages(res, listExperimentPages(deps.db, await scope(req)), deps.log);
  });
  router.post('/', async (req, res) => {
    const s = await scope(req);
    ok(res, await createExperiment(deps.db, s, await bodyOf(req, createExperimentInput), Date.now()), 201);
  });
  router.get('/:experiment_id', async (req, res) => {
    ok(res, await getExperiment(deps.db, await scope(req), idOf(req)));
  });
  router.patch('/:experiment_id', async (req, res) => {
    const s = await scope(req);
    ok(res, await updateExperiment(deps.db, s, idOf(req), await bodyOf(req, updateExperimentInput), Date.now()));
  });
  router.delete('/:experiment_id', async (req, res) => {
    ok(res, await deleteExperiment(deps.db, await scope(req), idOf(req), Date.now()));
  });
  router.post('/:experiment_id/:action', async (req, res, next) => {
    const action = req.params.action;
    if (!isExperimentAction(action)) {
      next();
      return;
    }
    const s = await scope(req);
    const body = action === 'decide' ? await bodyOf(req, decideInput) : (await bodyOf(req, emptyInput, {}), undefined);
    ok(res, await applyAction(deps.db, s, idOf(req), action, body, Date.now()));
  });

  app.use('/api/app/workspaces/:workspace_id/experiments', router);

  // Public: it describes the API and holds no data, so generators and tools can fetch it freely.
  const document = servedExperimentsOpenApi(deps.config.BASE_URL);
  app.get('/api/app/openapi.json', surface('app'), (_req, res) => {
    res.json(document);
  });
}

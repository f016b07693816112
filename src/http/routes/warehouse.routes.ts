/**
 * Warehouse connector API under /api/app/projects/{pid}/warehouse-sources:
 * sources, imports, manual-sync and history. Writes need owner or admin; reads any role.
 * App-surface errors: `{status:"error", error}` (plus `type` for 4xx other than 401/403).
 */
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import { unstorableTextAt } from '../../domain/experiment-input.js';
import type { Role } from '../../domain/roles.js';
import { ValidationError } from '../../lib/errors.js';
import {
  createImport,
  getImport,
  importHistory,
  listProjectImports,
  manualSync,
  patchImport,
  publicImport,
  removeImport,
} from '../../warehouse/imports.service.js';
import { createSource, getSource, listProjectSources, parseId, publicSource, removeSource } from '../../warehouse/sources.service.js';
import { testSource } from '../../warehouse/source-test.service.js';
import { accessOf, requireProject } from '../auth-middleware.js';
import { readBody } from '../request-body.js';
import type { AppDeps } from '../deps.js';
import { requireResidency } from '../ingest-auth.js';
import { integer, type Params } from '../read-back-params.js';
import { surface } from '../surface.js';

const WRITERS: readonly Role[] = ['owner', 'admin'];
const MAX_BODY_BYTES = 256 * 1024;

/** The JSON object body of a write; a clear 4xx for anything else. */
async function jsonBody(req: Request): Promise<unknown> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const raw = await readBody(req, { maxBytes: MAX_BODY_BYTES });
  if (raw.length === 0) throw new ValidationError(400, 'request body is empty: send a JSON object');
  if (type && type !== 'application/json' && !type.endsWith('+json')) {
    throw new ValidationError(415, `Content-Type must be application/json, not ${type}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ValidationError(400, 'request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError(400, 'request body must be a JSON object');
  // Names and column names are stored as text: PostgreSQL refuses a NUL (a 500), SQLite mangles a lone surrogate.
  const bad = unstorableTextAt(body);
  if (bad !== undefined) throw new ValidationError(400, `'${bad}': contains a NUL character or an unpaired surrogate`);
  return body;
}

const ok = (res: Response, results: unknown) => res.json({ status: 'ok', results });

/** `delete_data` of DELETE …/imports/{id}: also delete the import's events (Mixpanel's parameter). */
function deleteDataOf(value: unknown): boolean {
  if (value === undefined || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new ValidationError(400, "query parameter 'delete_data' must be true or false");
}

export function mountWarehouse(app: Express, deps: AppDeps): void {
  const r = express.Router({ mergeParams: true });
  const pid = (req: Request) => req.params.pid;
  // Access, then the project's residency: a source of another region's project would sync its data here.
  const local = requireResidency(deps.config.REGION);
  const inRegion = (guard: RequestHandler): RequestHandler => (req, res, next) => guard(req, res, () => local(req, res, next));
  const read = inRegion(requireProject(deps, pid));
  const write = inRegion(requireProject(deps, pid, WRITERS));
  const projectId = (res: Response) => accessOf(res).project.id;

  r.post('/', write, async (req, res) => {
    const body = await jsonBody(req);
    ok(res, await createSource(deps, projectId(res), body));
  });
  r.get('/', read, async (_req, res) => {
    ok(res, await listProjectSources(deps.db, projectId(res)));
  });

  // Imports first: "imports" must not be taken for a source id.
  r.post('/imports', write, async (req, res) => {
    const body = await jsonBody(req);
    ok(res, await createImport(deps, projectId(res), body));
  });
  r.get('/imports', read, async (_req, res) => {
    ok(res, await listProjectImports(deps.db, projectId(res)));
  });
  r.get('/imports/:importId', read, async (req, res) => {
    const imp = await getImport(deps.db, projectId(res), parseId(req.params.importId, 'warehouse import'));
    ok(res, publicImport(imp));
  });
  r.patch('/imports/:importId', write, async (req, res) => {
    const id = parseId(req.params.importId, 'warehouse import');
    const body = await jsonBody(req);
    ok(res, await patchImport(deps.db, projectId(res), id, body));
  });
  r.delete('/imports/:importId', write, async (req, res) => {
    const id = parseId(req.params.importId, 'warehouse import');
    const deleteData = deleteDataOf((req.query as Params).delete_data);
    const { eventsDeleted } = await removeImport(deps.db, projectId(res), id, deleteData ? deps.events : undefined);
    ok(res, { id, deleted: true, ...(eventsDeleted !== undefined ? { events_deleted: eventsDeleted } : {}) });
  });
  r.put('/imports/:importId/manual-sync', write, async (req, res) => {
    const id = parseId(req.params.importId, 'warehouse import');
    req.resume(); // no body is expected; drain whatever was sent
    const run = await manualSync(deps, projectId(res), id, deps.config.MANUAL_SYNC_PER_HOUR);
    ok(res, { run_id: run.id, job_id: run.jobId, status: run.status });
  });
  r.get('/imports/:importId/history', read, async (req, res) => {
    const id = parseId(req.params.importId, 'warehouse import');
    const limit = integer(req.query as Params, 'limit', { min: 1, max: 1000, default: 100 })!;
    ok(res, { runs: await importHistory(deps.db, projectId(res), id, limit) });
  });

  r.post('/:sourceId/test', write, async (req, res) => {
    const id = parseId(req.params.sourceId, 'warehouse source');
    req.resume(); // no body is expected; drain whatever was sent
    ok(res, await testSource(deps, projectId(res), id));
  });
  r.get('/:sourceId', read, async (req, res) => {
    ok(res, publicSource(await getSource(deps.db, projectId(res), parseId(req.params.sourceId, 'warehouse source'))));
  });
  r.delete('/:sourceId', write, async (req, res) => {
    const id = parseId(req.params.sourceId, 'warehouse source');
    await removeSource(deps.db, projectId(res), id);
    ok(res, { id, deleted: true });
  });

  app.use('/api/app/projects/:pid/warehouse-sources', surface('app'), r);
}

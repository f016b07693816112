/**
 * Managing lookup tables through the app API (`{status:"ok",results}` / `{status:"error",…}`):
 *
 * - `POST   /api/app/projects/{pid}/lookup-tables {name, mapped_property?}` (owner/admin)
 * - `GET    /api/app/projects/{pid}/lookup-tables` and `…/{id}` (any role)
 * - `PATCH  /api/app/projects/{pid}/lookup-tables/{id} {name?, mapped_property?}` (owner/admin);
 *   `mapped_property: null` unmaps the table
 * - `DELETE /api/app/projects/{pid}/lookup-tables/{id}` (owner/admin)
 *
 * `mapped_property` names the event property whose value is the table's key: read-back joins
 * the matching row's properties into exported events.
 */
import express, { type Express, type Request } from 'express';
import { z } from 'zod';
import {
  countLookupRows,
  deleteLookupTable,
  findLookupTable,
  insertLookupTable,
  isNameTaken,
  listLookupTables,
  updateLookupTable,
  type LookupTable,
} from '../../db/lookup-tables.repo.js';
import type { DbOrTrx } from '../../db/knex.js';
import { unstorableTextAt } from '../../domain/experiment-input.js';
import { ValidationError, NotFoundError } from '../../lib/errors.js';
import { accessOf, requireProject } from '../auth-middleware.js';
import type { AppDeps } from '../deps.js';
import { assertResidency } from '../ingest-auth.js';
import { readJsonBody } from '../request-body.js';
import { surface } from '../surface.js';
import { lookupTableIdOf } from './lookup-tables.routes.js';
import { isoTimeOrNull } from '../../domain/iso-time.js';

const MAX_BODY_BYTES = 64 * 1024;
const name = z.string().trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters');
const mappedProperty = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').nullable();
const createInput = z.strictObject({ name, mapped_property: mappedProperty.optional() });
const patchInput = z.strictObject({ name: name.optional(), mapped_property: mappedProperty.optional() });

// The (project, name) unique key is the one check: a name taken before the write, or by a
// concurrent create or rename meanwhile, is refused by it (isNameTaken), never a 500.
const nameTaken = (name: string, projectId: number) => new ValidationError(409, `a lookup table named '${name}' already exists in project ${projectId}`);

function describe(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `'${i.path.join('.')}' ${i.message}` : i.message)).join('; ');
}

async function bodyOf<T>(req: Request, schema: z.ZodType<T>): Promise<T> {
  const raw = await readJsonBody(req, MAX_BODY_BYTES);
  if (raw === undefined) throw new ValidationError(400, 'request body must be a JSON object');
  // Names are stored as text: PostgreSQL refuses a NUL (a 500), SQLite mangles a lone surrogate.
  const bad = unstorableTextAt(raw);
  if (bad !== undefined) throw new ValidationError(400, `'${bad}': contains a NUL character or an unpaired surrogate`);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(400, describe(parsed.error));
  return parsed.data;
}

async function present(db: DbOrTrx, t: LookupTable) {
  return {
    id: t.id,
    name: t.name,
    mapped_property: t.mappedProperty,
    created: isoTimeOrNull(t.createdAt),
    last_replaced: isoTimeOrNull(t.replacedAt),
    num_rows: await countLookupRows(db, t.id),
  };
}

export function mountLookupTablesApp(app: Express, deps: AppDeps): void {
  const router = express.Router({ mergeParams: true });
  const projectOf = (req: Request) => req.params.project_id;
  const anyRole = requireProject(deps, projectOf);
  const writer = requireProject(deps, projectOf, ['owner', 'admin']);
  router.use(surface('app'));

  const tableOf = async (req: Request, projectId: number): Promise<LookupTable> => {
    const id = lookupTableIdOf(req.params.id);
    const table = await findLookupTable(deps.db, id);
    if (!table || table.projectId !== projectId) throw new NotFoundError(`lookup table ${id} not found in project ${projectId}`);
    return table;
  };
  const project = (res: express.Response) => {
    const { project: p } = accessOf(res);
    assertResidency(p, deps.config.REGION);
    return p;
  };

  router.post('/', writer, async (req, res) => {
    const p = project(res);
    const input = await bodyOf(req, createInput);
    const table = await insertLookupTable(deps.db, { projectId: p.id, name: input.name, mappedProperty: input.mapped_property ?? null, now: Date.now() }).catch(
      (err: unknown) => {
        throw isNameTaken(err) ? nameTaken(input.name, p.id) : err;
      },
    );
    res.json({ status: 'ok', results: await present(deps.db, table) });
  });

  router.get('/', anyRole, async (_req, res) => {
    const tables = await listLookupTables(deps.db, project(res).id);
    res.json({ status: 'ok', results: await Promise.all(tables.map((t) => present(deps.db, t))) });
  });

  router.get('/:id', anyRole, async (req, res) => {
    res.json({ status: 'ok', results: await present(deps.db, await tableOf(req, project(res).id)) });
  });

  router.patch('/:id', writer, async (req, res) => {
    const p = project(res);
    const table = await tableOf(req, p.id);
    const input = await bodyOf(req, patchInput);
    const updated = await updateLookupTable(deps.db, table.id, { name: input.name, mappedProperty: input.mapped_property }).catch((err: unknown) => {
      throw isNameTaken(err) ? nameTaken(input.name!, p.id) : err;
    });
    // Deleted since tableOf found it: the same 404 as had it been gone before.
    if (!updated) throw new NotFoundError(`lookup table ${table.id} not found in project ${p.id}`);
    res.json({ status: 'ok', results: await present(deps.db, updated) });
  });

  router.delete('/:id', writer, async (req, res) => {
    const table = await tableOf(req, project(res).id);
    await deps.db.transaction((trx) => deleteLookupTable(trx, table.id));
    res.json({ status: 'ok', results: { id: table.id, deleted: true } });
  });

  app.use('/api/app/projects/:project_id/lookup-tables', router);
}

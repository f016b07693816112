/**
 * Mixpanel's lookup-table ingestion API, ingestion surface (`{code,error,status}`):
 *
 * - `GET /lookup-tables?project_id=` → `{code:200,status:"OK",results:[{id,name}]}` (any role);
 * - `PUT /lookup-tables/{id}?project_id=` with `text/csv` (gzip optional) replaces the table's
 *   rows all-or-nothing → `{code:200,status:"OK",num_rows}`; 400 with `failed_records`, 404 for a
 *   table that is not this project's, 413 past LOOKUP_TABLE_MAX_BYTES, 415 another media type.
 *
 * Tables are created and mapped to event properties through the app API (lookup-tables-app.routes.ts).
 */
import express, { type Express } from 'express';
import { findLookupTable, listLookupTables } from '../../db/lookup-tables.repo.js';
import { rowIdOf } from '../../domain/row-id.js';
import { replaceLookupTable } from '../../ingest/lookup-tables.ingest.js';
import { NotFoundError } from '../../lib/errors.js';
import { accessOf } from '../auth-middleware.js';
import { assertCsvRequest, csvBody } from '../csv-body.js';
import type { AppDeps } from '../deps.js';
import { writeAccess } from '../ingest-auth.js';
import { requireReadAccess } from '../read-back-access.js';
import { surface } from '../surface.js';

/** A table id from the path; anything that is not one names no table. */
export function lookupTableIdOf(value: unknown): number {
  const n = rowIdOf(value);
  if (n === undefined) throw new NotFoundError(`lookup table '${String(value).slice(0, 40)}' not found`);
  return n;
}

export function mountLookupTables(app: Express, deps: AppDeps): void {
  const router = express.Router();
  router.use(surface('ingest'));

  router.get(
    '/',
    requireReadAccess(deps, (req) => req.query.project_id),
    async (_req, res) => {
      const tables = await listLookupTables(deps.db, accessOf(res).project.id);
      res.json({ code: 200, status: 'OK', results: tables.map((t) => ({ id: t.id, name: t.name })) });
    },
  );

  router.put('/:id', async (req, res) => {
    const { project } = await writeAccess(deps, req);
    const id = lookupTableIdOf(req.params.id);
    const table = await findLookupTable(deps.db, id);
    if (!table || table.projectId !== project.id) {
      req.resume();
      throw new NotFoundError(`lookup table ${id} not found in project ${project.id}`);
    }
    assertCsvRequest(req);
    const { rows } = await replaceLookupTable(deps.db, id, csvBody(req, deps.config.LOOKUP_TABLE_MAX_BYTES));
    res.json({ code: 200, status: 'OK', num_rows: rows });
  });

  app.use('/lookup-tables', router);
}

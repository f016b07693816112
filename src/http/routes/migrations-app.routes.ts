/**
 * Migrations and usage in the app API (any role on the project):
 *
 * - `GET /api/app/projects/{pid}/migrations?limit=` — newest first (default 50, at most 200)
 * - `GET /api/app/projects/{pid}/migrations/{id}` — one run with its per-day rows
 * - `GET /api/app/projects/{pid}/usage?month=YYYY-MM` — events newly stored that month (UTC), by
 *   ingestion source, so a user sees what a backfill cost (default: the current month)
 */
import type { Express } from 'express';
import { findMigration, listMigrations } from '../../db/migration-runs.repo.js';
import { mirrorChangesForMonth } from '../../db/sync-runs.repo.js';
import { monthOf } from '../../domain/time-buckets.js';
import { ValidationError } from '../../lib/errors.js';
import { migrationView } from '../../migration/migration-view.js';
import { accessOf, requireProject } from '../auth-middleware.js';
import { integer, type Params } from '../read-back-params.js';
import type { AppDeps } from '../deps.js';
import { surface } from '../surface.js';
import { migrationIdOf } from './migrate.routes.js';

function monthParam(value: unknown, now: number): string {
  if (value === undefined) return monthOf(now);
  if (typeof value !== 'string' || !/^\d{4}-(0[1-9]|1[0-2])$/.test(value)) throw new ValidationError(400, "'month' must be 'YYYY-MM'");
  return value;
}

export function mountMigrationsApp(app: Express, deps: AppDeps): void {
  const access = requireProject(deps, (req) => req.params.pid);

  app.get('/api/app/projects/:pid/migrations', surface('app'), access, async (req, res) => {
    const { project } = accessOf(res);
    const runs = await listMigrations(deps.db, project.id, integer(req.query as Params, 'limit', { min: 1, max: 200, default: 50 })!);
    const results = [];
    for (const m of runs) results.push(await migrationView(deps.db, m));
    res.json({ status: 'ok', results });
  });

  app.get('/api/app/projects/:pid/migrations/:id', surface('app'), access, async (req, res) => {
    const { project } = accessOf(res);
    const m = await findMigration(deps.db, migrationIdOf(req.params.id));
    if (!m || m.projectId !== project.id) throw new ValidationError(404, 'migration not found');
    res.json({ status: 'ok', results: await migrationView(deps.db, m, { days: true }) });
  });

  app.get('/api/app/projects/:pid/usage', surface('app'), access, async (req, res) => {
    const { project } = accessOf(res);
    const month = monthParam(req.query.month, Date.now());
    const sources = await deps.events.usageForMonth(project.id, month);
    const total = Object.values(sources).reduce((s, n) => s + n, 0);
    // Mirror syncs' updates and deletes are not new events: counted apart (docs/warehouse.md).
    const mirror = await mirrorChangesForMonth(deps.db, project.id, month);
    res.json({ status: 'ok', results: { project_id: project.id, month, events: total, sources, events_updated: mirror.updated, events_deleted: mirror.deleted } });
  });
}

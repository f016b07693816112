/**
 * The migration service (CONTRACT §4, docs/migration.md):
 *
 * - `POST /migrate/<tool>` (tool: amplitude) — body per seed §4.4 with the project token as
 *   SERVICE_TOKEN → 202 `{"status":"ok","results":{migration_id,status,start_date,end_date,dry_run}}`.
 * - `GET /migrate/migrations/{id}` — Basic auth with the project token as username → progress.
 *
 * Errors use the app shape: `{status:"error",type,error}`; 401/403 `{status:"error",error}`.
 */
import type { Express, Request } from 'express';
import { parseBasicAuth } from '../../accounts/authenticator.js';
import { findProjectByToken } from '../../db/accounts.repo.js';
import { findMigration } from '../../db/migration-runs.repo.js';
import { ValidationError } from '../../lib/errors.js';
import { createMigration, sourceToolOf } from '../../migration/migration-create.service.js';
import { migrationView } from '../../migration/migration-view.js';
import type { AppDeps } from '../deps.js';
import { readJsonBody } from '../json-body.js';
import { surface } from '../surface.js';

const MAX_BODY_BYTES = 64 * 1024;

/** Migration ids are UUIDs; anything else cannot name one. */
export function migrationIdOf(value: unknown): string {
  if (typeof value === 'string' && /^[0-9a-f-]{36}$/i.test(value)) return value.toLowerCase();
  throw new ValidationError(404, 'migration not found');
}

async function tokenProject(deps: AppDeps, req: Request) {
  const creds = parseBasicAuth(req.headers.authorization);
  const project = creds?.username ? await findProjectByToken(deps.db, creds.username) : undefined;
  if (!project) throw new ValidationError(401, 'send the project token as the Basic auth username');
  return project;
}

export function mountMigrate(app: Express, deps: AppDeps): void {
  app.post('/migrate/:tool', surface('app'), async (req, res) => {
    const tool = sourceToolOf(String(req.params.tool).toLowerCase());
    const body = await readJsonBody(req, MAX_BODY_BYTES);
    if (body === undefined) throw new ValidationError(400, 'the request body must be a JSON object with SOURCE_TOOL_API_KEY, SOURCE_TOOL_API_SECRET and SERVICE_TOKEN');
    const { migration } = await createMigration(deps, tool, body);
    res.status(202).json({
      status: 'ok',
      results: {
        migration_id: migration.id,
        status: migration.status,
        start_date: migration.startDate,
        end_date: migration.endDate,
        dry_run: migration.dryRun,
      },
    });
  });

  app.get('/migrate/migrations/:id', surface('app'), async (req, res) => {
    const project = await tokenProject(deps, req);
    const m = await findMigration(deps.db, migrationIdOf(req.params.id));
    // Another project's run looks exactly like a missing one.
    if (!m || m.projectId !== project.id) throw new ValidationError(404, 'migration not found');
    res.json({ status: 'ok', results: await migrationView(deps.db, m, { days: true }) });
  });
}

/**
 * The migration service (docs/migration.md):
 *
 * - `POST /migrate/<tool>` (tool: amplitude) — body `{SOURCE_TOOL_API_KEY, SOURCE_TOOL_API_SECRET, SERVICE_TOKEN, START_DATE?, END_DATE?, DRY_RUN?, REGION?}` with the project token as
 *   SERVICE_TOKEN → 202 `{"status":"ok","results":{migration_id,status,start_date,end_date,dry_run}}`.
 * - `GET /migrate/migrations/{id}` — Basic auth with the project token as username → progress.
 *
 * Errors use the app shape: `{status:"error",type,error}`; 401/403 `{status:"error",error}`.
 */
import type { Express, Request } from 'express';
import { parseBasicAuth } from '../../accounts/authenticator.js';
import { findProjectByToken, type Project } from '../../db/accounts.repo.js';
import type { Role } from '../../domain/roles.js';
import { accessTo, principalOf } from '../auth-middleware.js';
import { findMigration } from '../../db/migration-runs.repo.js';
import { ValidationError } from '../../lib/errors.js';
import { createMigration, sourceToolOf } from '../../migration/migration-create.service.js';
import { migrationView } from '../../migration/migration-view.js';
import type { AppDeps } from '../deps.js';
import { readJsonBody } from '../request-body.js';
import { surface } from '../surface.js';

const MAX_BODY_BYTES = 64 * 1024;
const MIGRATORS: readonly Role[] = ['owner', 'admin'];

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
    // MIGRATION_REQUIRE_AUTH: credentials first (no work for strangers), the project check once
    // SERVICE_TOKEN names it: the project secret, or an owner/admin service account.
    const principal = deps.config.MIGRATION_REQUIRE_AUTH ? await principalOf(req, deps.auth) : undefined;
    const authorize = principal
      ? async (project: Project) => {
          const access = await accessTo(deps.db, principal, project.id);
          if (!MIGRATORS.includes(access.role)) throw new ValidationError(403, `role '${access.role}' may not start migrations; needs owner or admin`);
        }
      : undefined;
    const body = await readJsonBody(req, MAX_BODY_BYTES);
    if (body === undefined) throw new ValidationError(400, 'the request body must be a JSON object with SOURCE_TOOL_API_KEY, SOURCE_TOOL_API_SECRET and SERVICE_TOKEN');
    const migration = await createMigration({ ...deps, authorize }, tool, body);
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

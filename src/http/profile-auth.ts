/**
 * Which project a /engage or /groups request writes to. Basic credentials (an owner/admin service
 * account with `project_id`, or the project secret) when sent; otherwise the `$token` inside the
 * updates, as client SDKs send it. All updates of one request must name the same project.
 * 401 failing authentication or no token, 403 a token of another project than the credentials,
 * 400 mixed tokens or a project of another residency.
 */
import type { Request } from 'express';
import type { Config } from '../../config/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import { findProjectByToken, type Project } from '../db/accounts.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import { ValidationError } from '../lib/errors.js';
import { assertResidency, writeAccess } from './ingest-auth.js';

interface ProfileAuthDeps {
  db: DbOrTrx;
  auth: Authenticator;
  config: Pick<Config, 'REGION'>;
}

/** The distinct non-empty `$token` strings of the updates. */
export function profileTokensOf(updates: readonly unknown[]): Set<string> {
  const tokens = new Set<string>();
  for (const u of updates) {
    const token = typeof u === 'object' && u !== null ? (u as { $token?: unknown }).$token : undefined;
    if (typeof token === 'string' && token !== '') tokens.add(token);
  }
  return tokens;
}

export async function profileProject(deps: ProfileAuthDeps, req: Request, updates: readonly unknown[]): Promise<Project> {
  const tokens = profileTokensOf(updates);
  if (tokens.size > 1) throw new ValidationError(400, "all updates of one request must carry the same '$token'");
  const [token] = tokens;
  if (req.headers.authorization) {
    const { project } = await writeAccess(deps, req);
    if (token !== undefined && token !== project.token) {
      throw new ValidationError(403, "the updates carry the '$token' of another project than the credentials");
    }
    return project;
  }
  if (token === undefined) throw new ValidationError(401, "missing project token: set '$token' in each update (or send Basic credentials)");
  const project = await findProjectByToken(deps.db, token);
  if (!project) throw new ValidationError(401, 'Invalid token');
  assertResidency(project, deps.config.REGION);
  return project;
}

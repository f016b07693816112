/**
 * Who is calling the experiments API and on which workspace: 401 for bad credentials, 400 for a
 * malformed workspace id, 403 for an unknown workspace or one whose project the service account
 * has no role on (alike, so workspace ids cannot be probed — as the rest of the app API does for
 * projects), 400 naming the right region for a project of another data residency.
 */
import type { Request } from 'express';
import type { Config } from '../../config/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import { findWorkspace } from '../db/accounts.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import type { ExperimentScope } from '../experiments/experiments.service.js';
import { ValidationError } from '../lib/errors.js';
import { accessTo, principalOf } from './auth-middleware.js';
import { positiveIdOf } from '../domain/row-id.js';

export function parseWorkspaceId(value: unknown): number {
  const n = positiveIdOf(value);
  if (n === undefined) throw new ValidationError(400, "'workspace_id' must be a positive integer");
  return n;
}

export async function experimentScopeOf(
  req: Request,
  deps: { db: DbOrTrx; auth: Authenticator; config: Pick<Config, 'REGION'> },
): Promise<ExperimentScope> {
  const principal = await principalOf(req, deps.auth);
  if (principal.kind !== 'service_account') {
    // Every change is attributed to a service account (creator_*, last_modified_by_*), so the
    // project secret, which names no one, is not enough here.
    throw new ValidationError(403, 'the experiments API needs service account credentials, not the project secret');
  }
  const workspaceId = parseWorkspaceId(req.params.workspace_id);
  const denied = new ValidationError(403, `service account has no access to workspace ${workspaceId}`);
  const workspace = await findWorkspace(deps.db, workspaceId);
  if (!workspace) throw denied;
  const access = await accessTo(deps.db, principal, workspace.projectId).catch((err: unknown) => {
    throw err instanceof ValidationError && err.status === 403 ? denied : err;
  });
  if (access.project.residency !== deps.config.REGION) {
    throw new ValidationError(
      400,
      `project ${access.project.id} uses ${access.project.residency} data residency; send this request to the ${access.project.residency} host, not ${deps.config.REGION}`,
      { type: 'wrong_region' },
    );
  }
  const { id, username, email } = principal.account;
  return { workspaceId, role: access.role, actor: { id, name: username, email } };
}

/**
 * Authentication and per-project authorization. Failing authentication is 401; authenticated
 * but not allowed on this project is 403. The resolved access sits in `res.locals.access`.
 */
import type { NextFunction, Request, Response } from 'express';
import { parseBasicAuth, type Authenticator, type Principal } from '../accounts/authenticator.js';
import { findProjectById, roleIn, type Project } from '../db/accounts.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import type { Role } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';
import { positiveIdOf } from '../domain/row-id.js';

export interface ProjectAccess {
  project: Project;
  /** The project secret acts as owner. */
  role: Role;
  serviceAccount?: { id: number; username: string; email: string | null };
}

export const unauthorized = () => new ValidationError(401, 'Invalid credentials');

export async function principalOf(req: Request, auth: Authenticator): Promise<Principal> {
  const principal = await auth.authenticate(parseBasicAuth(req.headers.authorization));
  if (!principal) throw unauthorized();
  return principal;
}

/** Resolves the principal's access to a project; 404 for an unknown project, 403 without a role. */
export async function accessTo(db: DbOrTrx, principal: Principal, projectId: number): Promise<ProjectAccess> {
  if (principal.kind === 'project_secret') {
    if (principal.project.id !== projectId) throw new ValidationError(403, 'these credentials are not for this project');
    return { project: principal.project, role: 'owner' };
  }
  const project = await findProjectById(db, projectId);
  const role = project ? await roleIn(db, principal.account.id, project.id) : undefined;
  if (!project || !role) {
    // Unknown and not-yours look alike, so ids cannot be probed.
    throw new ValidationError(403, `service account has no access to project ${projectId}`);
  }
  const { id, username, email } = principal.account;
  return { project, role, serviceAccount: { id, username, email } };
}

export function parseProjectId(value: unknown): number {
  const n = positiveIdOf(value);
  if (n === undefined) throw new ValidationError(400, "'project_id' must be a positive integer");
  return n;
}

/**
 * Middleware: authenticate, then require a role on the project named by `projectIdOf(req)`.
 * `allowed` lists the roles that may proceed (default: all).
 */
export function requireProject(
  deps: { db: DbOrTrx; auth: Authenticator },
  projectIdOf: (req: Request) => unknown,
  allowed?: readonly Role[],
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const principal = await principalOf(req, deps.auth);
    const access = await accessTo(deps.db, principal, parseProjectId(projectIdOf(req)));
    if (allowed && !allowed.includes(access.role)) {
      throw new ValidationError(403, `role '${access.role}' may not do this; needs ${allowed.join(' or ')}`);
    }
    res.locals.access = access;
    next();
  };
}

export function accessOf(res: Response): ProjectAccess {
  return res.locals.access as ProjectAccess;
}

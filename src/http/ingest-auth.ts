/**
 * Who may write events where. /import: an owner/admin service account of `project_id`, or the
 * project secret as Basic username with an empty password. /track: the project token inside
 * the records (as client SDKs send it), or the same Basic credentials. Failing authentication
 * is 401, authenticated but not allowed 403, a project of another residency 400.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Config } from '../../config/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import { findProjectByToken, type Project } from '../db/accounts.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import type { Role } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';
import { accessOf, accessTo, parseProjectId, principalOf, type ProjectAccess } from './auth-middleware.js';
import { recentAccessOf } from './recent-access.js';

export const WRITE_ROLES: readonly Role[] = ['owner', 'admin'];

interface AuthDeps {
  db: DbOrTrx;
  auth: Authenticator;
  config: Pick<Config, 'REGION'>;
}

/** 400 naming the right region when the project's data lives elsewhere. */
export function assertResidency(project: Project, region: string): void {
  if (project.residency !== region) {
    throw new ValidationError(
      400,
      `project ${project.id} has data residency ${project.residency}, but this is the ${region} region: send its data to the ${project.residency} ingestion host`,
    );
  }
}

/**
 * Middleware after requireProject, for routers that bring data in by other paths than ingestion
 * (batch imports, warehouse sources and imports): the same 400 for a project of another residency.
 */
export function requireResidency(region: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    assertResidency(accessOf(res).project, region);
    next();
  };
}

function queryProjectId(req: Request): unknown {
  const v = req.query.project_id;
  return Array.isArray(v) ? v[0] : v;
}

/** Basic credentials → write access to a project (`project_id` optional for the project secret). */
export async function writeAccess(deps: AuthDeps, req: Request, allowed: readonly Role[] = WRITE_ROLES): Promise<ProjectAccess> {
  const raw = queryProjectId(req);
  const recent = recentAccessOf(deps);
  // Only plain requests are remembered (one project_id or none); anything odd takes the full path.
  const projectKey = raw === undefined ? '' : typeof raw === 'string' ? raw : undefined;
  const key = req.headers.authorization && projectKey !== undefined ? recent.keyOf(req.headers.authorization, projectKey) : undefined;
  const seen = key ? recent.get(key) : undefined;
  const access = seen ?? (await lookUpWriteAccess(deps, req, raw));
  checkWriteAccess(access, allowed, deps.config.REGION);
  if (key && !seen) recent.set(key, access);
  return access;
}

function checkWriteAccess(access: ProjectAccess, allowed: readonly Role[], region: string): void {
  if (!allowed.includes(access.role)) {
    throw new ValidationError(403, `role '${access.role}' may not import data; needs ${allowed.join(' or ')}`);
  }
  assertResidency(access.project, region);
}

async function lookUpWriteAccess(deps: AuthDeps, req: Request, raw: unknown): Promise<ProjectAccess> {
  const principal = await principalOf(req, deps.auth);
  let projectId: number;
  if (raw === undefined || raw === '') {
    if (principal.kind !== 'project_secret') {
      throw new ValidationError(400, "'project_id' query parameter is required with service account credentials");
    }
    projectId = principal.project.id;
  } else projectId = parseProjectId(raw);
  return accessTo(deps.db, principal, projectId);
}

/** Where a client SDK puts the project token: /track's `properties.token`, a profile update's `$token`. */
export interface TokenField {
  /** How messages name the field, e.g. `'token'`. */
  field: string;
  /** How messages name one item, e.g. `record`. */
  item: string;
  /** The token an item carries; undefined for none (missing, empty or not a string). */
  of: (item: unknown) => string | undefined;
}

const nonEmpty = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

export const TRACK_TOKEN: TokenField = {
  field: "'token'",
  item: 'record',
  of: (r) => {
    const props = (r as { properties?: unknown } | null)?.properties;
    return nonEmpty(typeof props === 'object' && props !== null ? (props as { token?: unknown }).token : undefined);
  },
};

export const PROFILE_TOKEN: TokenField = {
  field: "'$token'",
  item: 'update',
  of: (u) => nonEmpty(typeof u === 'object' && u !== null ? (u as { $token?: unknown }).$token : undefined),
};

/**
 * The project a token-authenticated request (/track, /engage, /groups) writes to: Basic
 * credentials when sent (a token in the items must then be that project's), else the token the
 * items carry. One request names one project: mixed tokens are a 400, and without credentials
 * every item must carry the token (an item without one is a 400, not stored in the others').
 */
export async function tokenProject(deps: AuthDeps, req: Request, items: readonly unknown[], t: TokenField): Promise<Project> {
  const tokens = items.map(t.of);
  const named = new Set(tokens.filter((x): x is string => x !== undefined));
  if (named.size > 1) throw new ValidationError(400, `all ${t.item}s of one request must carry the same ${t.field}`);
  const [token] = named;
  if (req.headers.authorization) {
    const { project } = await writeAccess(deps, req);
    if (token !== undefined && token !== project.token) {
      throw new ValidationError(403, `the ${t.item}s carry the ${t.field} of another project than the credentials`);
    }
    return project;
  }
  if (token === undefined) throw new ValidationError(401, `missing project token: set ${t.field} in each ${t.item} (or send Basic credentials)`);
  const missing = tokens.indexOf(undefined);
  if (missing >= 0) {
    throw new ValidationError(400, `${t.item} ${missing} carries no ${t.field}: without Basic credentials every ${t.item} of a request must carry the project token`);
  }
  const project = await findProjectByToken(deps.db, token);
  if (!project) throw new ValidationError(401, 'Invalid token');
  assertResidency(project, deps.config.REGION);
  return project;
}

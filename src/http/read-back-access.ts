/**
 * Who may read a project's data back: any role of a service account on the project, or the
 * project secret (Basic username, empty password; `project_id` may then be left out, as with
 * Mixpanel's API secret). 401 failing authentication, 403 no role on the project, 400 for a
 * project of another data residency.
 */
import type { NextFunction, Request, Response } from 'express';
import { fromStore } from './error-middleware.js';
import type { Config } from '../../config/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import type { DbOrTrx } from '../db/knex.js';
import { canReadData } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';
import { accessTo, parseProjectId, principalOf } from './auth-middleware.js';

export interface ReadDeps {
  db: DbOrTrx;
  auth: Authenticator;
  config: Pick<Config, 'REGION'>;
}

/** Middleware: sets `res.locals.access` (see accessOf) for the project named by `projectIdOf`. */
export function requireReadAccess(deps: ReadDeps, projectIdOf: (req: Request) => unknown) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const principal = await principalOf(req, deps.auth);
    let raw = projectIdOf(req);
    if (Array.isArray(raw)) throw new ValidationError(400, "'project_id' must be given once");
    if ((raw === undefined || raw === '') && principal.kind === 'project_secret') raw = String(principal.project.id);
    if (raw === undefined || raw === '') {
      throw new ValidationError(400, "'project_id' is required with service account credentials");
    }
    const access = await accessTo(deps.db, principal, parseProjectId(raw));
    if (!canReadData(access.role)) throw new ValidationError(403, `role '${access.role}' may not read this project's data`);
    const region = deps.config.REGION;
    if (access.project.residency !== region) {
      throw new ValidationError(
        400,
        `project ${access.project.id} has data residency ${access.project.residency}, but this is the ${region} region: query the ${access.project.residency} host`,
      );
    }
    res.locals.access = access;
    next();
  };
}

/**
 * Router-level error decorator for the Mixpanel-compatible `/api/2.0/*` read-back endpoints:
 * adds `request` (the path and query asked for) to the `{code, error, status}` body, so Mixpanel
 * clients reading `error`/`request` and ours reading `code`/`status` both understand it.
 */
export function withRequestInErrors(err: unknown, req: Request, _res: Response, next: NextFunction): void {
  // A store outage too (503): the error middleware would shape it without `request`.
  const known = err instanceof ValidationError ? err : fromStore(err);
  if (known) {
    next(new ValidationError(known.status, known.message, { ...known.details, request: req.originalUrl.slice(0, 2048) }));
    return;
  }
  next(err);
}

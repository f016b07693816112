/**
 * The last handler of a path whose every method is routed: any other method is a 405 naming the
 * allowed ones (and `Allow`), in that path's own surface's error shape (the legacy SDK form
 * honours `verbose=1` as its handlers do). Without it the request fell through to the generic
 * 404, answered in the app API's shape.
 */
import type { Request, Response } from 'express';
import { ValidationError } from '../lib/errors.js';
import { verboseRequested } from './ingest-payload.js';

export function methodNotAllowed(allowed: readonly string[]) {
  const allow = allowed.join(', ');
  return (req: Request, res: Response): never => {
    res.locals.verbose = verboseRequested(req);
    throw new ValidationError(405, `method ${req.method} is not allowed on ${req.path}: use ${allow}`, { headers: { Allow: allow } });
  };
}

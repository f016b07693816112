/**
 * The `route` label of http_request_duration_seconds: the route's PATTERN
 * (`/api/app/projects/:pid/warehouse-sources/imports/:importId/history`), never the path a client
 * sent — literal ids would make one time series per project and import (unbounded cardinality,
 * and ids leaked to whoever reads /metrics).
 *
 * Express keeps the leaf route's pattern in `req.route.path`, but for a router mounted on a path
 * with parameters only the matched literal prefix (`req.baseUrl`). So after every router is
 * mounted, each mount layer is wrapped to note its pattern on the response first.
 */
import type { Express, NextFunction, Request, Response } from 'express';

interface MountLayer {
  route?: unknown;
  rawPath?: unknown;
  handle: ((req: Request, res: Response, next: NextFunction) => unknown) & { length: number; stack?: unknown[] };
}

/** Wraps every path-mounted middleware/router of `app` to record its pattern in res.locals.mountPattern. */
export function recordMountPatterns(app: Express): void {
  const stack = (app as unknown as { router?: { stack?: MountLayer[] } }).router?.stack ?? [];
  for (const layer of stack) {
    const pattern = layer.rawPath;
    // Route layers carry their own pattern; error handlers (arity 4) must keep their arity.
    if (layer.route !== undefined || typeof pattern !== 'string' || pattern === '/' || layer.handle.length > 3) continue;
    const inner = layer.handle;
    layer.handle = Object.assign(
      function mountPattern(req: Request, res: Response, next: NextFunction) {
        res.locals.mountPattern = pattern;
        return inner(req, res, next);
      },
      // A router's own table stays readable through the wrapper (allowed-methods.ts reads it).
      { stack: inner.stack },
    ) as MountLayer['handle'];
  }
}

/** The label for a finished request. */
export function routeLabel(req: Request, res: Response): string {
  const base = typeof res.locals.mountPattern === 'string' ? res.locals.mountPattern : '';
  const leaf = req.route?.path;
  if (typeof leaf === 'string') return `${base}${leaf === '/' && base ? '' : leaf}`;
  if (base) return base;
  return res.statusCode === 404 ? 'unmatched' : 'other';
}

/**
 * createApp(deps): the Express app of the web process. Each surface is a router; routers are
 * registered here and nowhere else.
 */
import crypto from 'node:crypto';
import express, { type Express } from 'express';
import { httpRequestDuration } from '../lib/metrics.js';
import type { AppDeps } from './deps.js';
import { errorMiddleware, notFoundHandler } from './error-middleware.js';
import { recordMountPatterns, routeLabel } from './route-label.js';
import { routers } from './routes/index.js';
import { storeOutageCheck } from '../store/store-outage.js';

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  app.set('query parser', 'extended');

  app.use((req, res, next) => {
    const reqId = (req.headers['x-request-id'] as string | undefined)?.slice(0, 64) || crypto.randomUUID();
    res.locals.reqId = reqId;
    res.setHeader('x-request-id', reqId);
    res.locals.log = deps.log.child({ reqId });
    const end = httpRequestDuration.startTimer({ method: req.method });
    res.on('finish', () => {
      const seconds = end({ route: routeLabel(req, res), status: String(res.statusCode) });
      // The path only: query strings can carry `data=` payloads and tokens. originalUrl, since
      // req.path is relative to whichever router last had the request (`/` for /admin/queues).
      const path = req.originalUrl.split('?', 1)[0];
      (res.locals.log as typeof deps.log).info({ method: req.method, path, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
    next();
  });

  for (const mount of routers) mount(app, deps);
  recordMountPatterns(app);

  app.use(notFoundHandler);
  app.use(errorMiddleware(deps.log, storeOutageCheck(deps.db, deps.events)));
  return app;
}

/**
 * The operator surface: Bull Board at /admin/queues (the three queues, with each job's progress
 * bar and log lines) and Prometheus /metrics, both behind ADMIN_USERNAME / ADMIN_PASSWORD
 * (src/http/operator-auth.ts). /healthz and /readyz stay open (health.routes.ts) so load
 * balancers and orchestrators need no credentials.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Express, Request, RequestHandler, Response } from 'express';
import { errorMessage } from '../../lib/errors.js';
import { queueDepth, registry } from '../../lib/metrics.js';
import { withTimeout } from '../../lib/with-timeout.js';
import type { AppDeps } from '../deps.js';
import { operatorAuthConfigured, requireOperator } from '../operator-auth.js';
import { surface } from '../surface.js';

export const BOARD_PATH = '/admin/queues';

/** How long /metrics and the board wait for Redis before answering without it. */
const REDIS_CHECK_MS = 1500;

export function mountOperator(app: Express, deps: AppDeps): void {
  if (!operatorAuthConfigured(deps.config)) {
    if (deps.config.NODE_ENV === 'development') deps.log.warn('operator routes are OPEN: set ADMIN_USERNAME and ADMIN_PASSWORD');
    else deps.log.error('ADMIN_USERNAME / ADMIN_PASSWORD not set: /admin/queues and /metrics answer 503');
  }
  const guard = [surface('operator'), requireOperator(deps.config)];

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: Object.values(deps.queues.queues).map((q) => new BullMQAdapter(q)),
    // @bull-board/express pins its own patch release of @bull-board/api; the shapes are the same.
    serverAdapter: serverAdapter as unknown as Parameters<typeof createBullBoard>[0]['serverAdapter'],
    options: { uiConfig: { boardTitle: 'Analytics jobs' } },
  });
  // The board's JSON API reads Redis through the shared client, whose commands wait for a
  // reconnect (maxRetriesPerRequest: null): while Redis is down it hung. A bounded PING first.
  const redisAnswers: RequestHandler = (req, res, next) => {
    if (!req.path.startsWith('/api/')) return next(); // the UI's pages and assets need no Redis
    deps.queues.redis.ping(REDIS_CHECK_MS).then(
      () => next(),
      (err: unknown) => {
        deps.log.warn({ err: errorMessage(err) }, 'queue dashboard: Redis not answering');
        res.status(503).set('Retry-After', '5').type('text/plain').send('queues unavailable: Redis is not answering');
      },
    );
  };
  app.use(BOARD_PATH, ...guard, redisAnswers, serverAdapter.getRouter());

  app.get('/metrics', ...guard, async (_req: Request, res: Response) => {
    try {
      // Sampled on scrape: a gauge nobody reads costs Redis nothing. Bounded, so a Redis outage
      // leaves the last depths in place and still answers with the process's own metrics.
      const depth = await withTimeout(deps.queues.depth(), REDIS_CHECK_MS);
      for (const [queue, counts] of Object.entries(depth)) {
        for (const [state, n] of Object.entries(counts)) queueDepth.set({ queue, state }, n);
      }
    } catch (err) {
      deps.log.warn({ err: errorMessage(err) }, 'queue depth not sampled');
    }
    res.type(registry.contentType).send(await registry.metrics());
  });
}

/**
 * The operator surface: Bull Board at /admin/queues (the three queues, with each job's progress
 * bar and log lines) and Prometheus /metrics, both behind ADMIN_USERNAME / ADMIN_PASSWORD
 * (src/http/operator-auth.ts). /healthz and /readyz stay open (health.routes.ts) so load
 * balancers and orchestrators need no credentials.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Express, Request, Response } from 'express';
import { errorMessage } from '../../lib/errors.js';
import { queueDepth, registry } from '../../lib/metrics.js';
import type { AppDeps } from '../deps.js';
import { operatorAuthConfigured, requireOperator } from '../operator-auth.js';
import { surface } from '../surface.js';

export const BOARD_PATH = '/admin/queues';

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
  app.use(BOARD_PATH, ...guard, serverAdapter.getRouter());

  app.get('/metrics', ...guard, async (_req: Request, res: Response) => {
    try {
      // Sampled on scrape: a gauge nobody reads costs Redis nothing.
      const depth = await deps.queues.depth();
      for (const [queue, counts] of Object.entries(depth)) {
        for (const [state, n] of Object.entries(counts)) queueDepth.set({ queue, state }, n);
      }
    } catch (err) {
      deps.log.warn({ err: errorMessage(err) }, 'queue depth not sampled');
    }
    res.type(registry.contentType).send(await registry.metrics());
  });
}

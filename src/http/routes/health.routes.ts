/**
 * `/healthz` (200 once the process serves) and `/readyz` (200 when every dependency answers, else
 * 503), open so that load balancers and probes need no credentials. Which dependency failed, and
 * its error text, is the operator's to read: `checks` is in the answer only with operator
 * credentials (or where the operator surface is open, NODE_ENV=development).
 */
import type { Express } from 'express';
import type { AppDeps } from '../deps.js';
import { withTimeout } from '../../lib/with-timeout.js';
import { checkOperator } from '../operator-auth.js';

/** How long each dependency gets to answer: a store that accepts connections but never answers must not hang the probe. */
const READY_CHECK_MS = 2000;

export function mountHealth(app: Express, deps: AppDeps): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (req, res) => {
    const results = await Promise.all(
      deps.readiness.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), READY_CHECK_MS);
          return [name, 'ok'] as const;
        } catch (err) {
          return [name, err instanceof Error ? err.message : String(err)] as const;
        }
      }),
    );
    const ready = results.every(([, s]) => s === 'ok');
    const status = ready ? 'ok' : 'unavailable';
    const operator = checkOperator(deps.config, req.headers.authorization);
    res.status(ready ? 200 : 503).json(operator === 'ok' || operator === 'open' ? { status, checks: Object.fromEntries(results) } : { status });
  });
}

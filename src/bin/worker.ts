/**
 * The worker process: BullMQ workers for every queue (jobs/worker-runtime.ts) and the
 * reconciler (src/runs/reconciler.ts). Cleanups are registered after the context's database,
 * Redis and queues, so shutdown runs: reconciler → workers (abort, hand back, close) → metrics
 * server → queues → Redis → database.
 */
import { listenError } from '../http/server.js';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { handlers } from '../../jobs/index.js';
import { reconcileSources } from '../../jobs/reconcile-sources.js';
import { WorkerRuntime } from '../../jobs/worker-runtime.js';
import { checkOperator, OPERATOR_REALM } from '../http/operator-auth.js';
import { installSignalHandlers } from '../lib/lifecycle.js';
import { registry } from '../lib/metrics.js';
import { Reconciler } from '../runs/reconciler.js';
import { createProcessContext, runMain, type ProcessContext } from './context.js';

export interface StartedWorker {
  runtime: WorkerRuntime;
  reconciler: Reconciler;
}

/** The worker's own /metrics (jobs_total lives here, not in web), behind operator auth. */
async function startMetricsServer(ctx: ProcessContext): Promise<void> {
  const server = http.createServer((req, res) => {
    const check = checkOperator(ctx.config, req.headers.authorization);
    if (check === 'unauthorized' || check === 'unconfigured') {
      res.writeHead(check === 'unauthorized' ? 401 : 503, check === 'unauthorized' ? { 'WWW-Authenticate': OPERATOR_REALM } : {});
      res.end(check === 'unauthorized' ? 'operator credentials required' : 'operator surface disabled');
      return;
    }
    if (req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end('not found');
      return;
    }
    registry
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text))
      .catch(() => res.writeHead(500).end('metrics unavailable'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError('WORKER_METRICS_PORT', ctx.config.WORKER_METRICS_PORT, ctx.config.HOST, err)));
    server.listen(ctx.config.WORKER_METRICS_PORT, ctx.config.HOST, resolve);
  });
  ctx.lifecycle.register('worker-metrics', () => new Promise<void>((resolve) => server.close(() => resolve())));
  ctx.log.info({ port: ctx.config.WORKER_METRICS_PORT }, 'worker metrics listening');
}

export async function startWorker(ctx: ProcessContext): Promise<StartedWorker> {
  if (ctx.config.WORKER_METRICS_PORT > 0) await startMetricsServer(ctx);
  const runtime = new WorkerRuntime({
    config: ctx.config,
    db: ctx.db,
    events: ctx.events,
    log: ctx.log,
    secrets: ctx.secrets,
    queues: ctx.queues,
    handlers,
  }).start();
  ctx.lifecycle.register('workers', () => runtime.close());
  const reconciler = new Reconciler({
    db: ctx.db,
    queues: ctx.queues,
    log: ctx.log.child({ component: 'reconciler' }),
    sources: reconcileSources,
    intervalMs: ctx.config.RECONCILE_INTERVAL_SEC * 1000,
  });
  ctx.lifecycle.register('reconciler', () => reconciler.stop());
  reconciler.start();
  return { runtime, reconciler };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const ctx = await createProcessContext();
    installSignalHandlers(ctx.lifecycle, ctx.config.SHUTDOWN_TIMEOUT_MS, ctx.log);
    await startWorker(ctx);
  });
}

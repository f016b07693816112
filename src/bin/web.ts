import { pathToFileURL } from 'node:url';
import { createApp } from '../http/app.js';
import { importWorkerCount, ingestWorkerPool } from '../ingest/ingest-workers.js';
import { listen } from '../http/server.js';
import { createProcessContext, runMain, type ProcessContext } from './context.js';
import { installSignalHandlers } from '../lib/lifecycle.js';

export async function startWeb(ctx: ProcessContext): Promise<{ port: number; protocol: string }> {
  const app = createApp({
    config: ctx.config,
    db: ctx.db,
    events: ctx.events,
    log: ctx.log,
    auth: ctx.auth,
    secrets: ctx.secrets,
    queues: ctx.queues,
    readiness: [
      { name: 'database', check: async () => void (await ctx.db.raw('select 1')) },
      { name: 'event store', check: () => ctx.events.ping() },
      { name: 'redis', check: () => ctx.redis.ping() },
    ],
  });
  // The /import workers start before the first request, not inline during it (ingest-workers.ts).
  await ingestWorkerPool(importWorkerCount(ctx.config, ctx.events)).warm();
  const server = await listen(app, ctx.config);
  ctx.lifecycle.register('http', server.close);
  ctx.log.info({ port: server.port, protocol: server.protocol }, 'web listening');
  return server;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const ctx = await createProcessContext();
    installSignalHandlers(ctx.lifecycle, ctx.config.SHUTDOWN_TIMEOUT_MS, ctx.log);
    await startWeb(ctx);
  });
}

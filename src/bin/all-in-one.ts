/**
 * `npm start`: release, web, worker and scheduler in one process on the embedded defaults —
 * the one-command demo and dev mode. Production runs them as separate Procfile processes.
 */
import { loadConfig } from '../../config/index.js';
import { installSignalHandlers } from '../lib/lifecycle.js';
import { redactUrl } from '../lib/redact-url.js';
import { createProcessContext, runMain } from './context.js';
import { release, releaseEventStore, runRelease } from './release.js';
import { startWeb } from './web.js';
import { startWorker } from './worker.js';
import { startScheduler } from './scheduler.js';

runMain(async () => {
  const config = loadConfig();
  const wanted = new Set(config.START_PROCESSES);
  if (wanted.size === 1 && wanted.has('release')) {
    // Release alone is a one-shot, as the Procfile's: it needs no Redis and must not idle afterwards.
    await runRelease(config);
    return;
  }
  const ctx = await createProcessContext(config);
  installSignalHandlers(ctx.lifecycle, config.SHUTDOWN_TIMEOUT_MS, ctx.log);
  if (wanted.has('release')) {
    await release(config, ctx.log.child({ component: 'database' }));
    await releaseEventStore(config);
  }
  if (wanted.has('worker')) await startWorker(ctx);
  if (wanted.has('scheduler')) await startScheduler(ctx);
  if (wanted.has('web')) {
    const { port, protocol } = await startWeb(ctx);
    process.stdout.write(`analytics service ready on ${protocol}://localhost:${port} (database ${redactUrl(config.DATABASE_URL)})\n`);
  }
});

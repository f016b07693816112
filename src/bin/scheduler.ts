import { pathToFileURL } from 'node:url';
import { installSignalHandlers } from '../lib/lifecycle.js';
import { createProcessContext, runMain, type ProcessContext } from './context.js';

/** Starts the node-cron scheduler for recurring syncs (filled in by the job platform). */
export async function startScheduler(ctx: ProcessContext): Promise<void> {
  ctx.log.info('scheduler: nothing scheduled yet');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const ctx = await createProcessContext();
    installSignalHandlers(ctx.lifecycle, ctx.config.SHUTDOWN_TIMEOUT_MS, ctx.log);
    await startScheduler(ctx);
  });
}

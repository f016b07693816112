import { pathToFileURL } from 'node:url';
import { installSignalHandlers } from '../lib/lifecycle.js';
import { createProcessContext, runMain, type ProcessContext } from './context.js';

/** Starts the BullMQ workers for every queue (filled in by the job platform). */
export async function startWorker(ctx: ProcessContext): Promise<void> {
  ctx.log.info('worker: no processors registered yet');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const ctx = await createProcessContext();
    installSignalHandlers(ctx.lifecycle, ctx.config.SHUTDOWN_TIMEOUT_MS, ctx.log);
    await startWorker(ctx);
  });
}

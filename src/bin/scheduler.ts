import { pathToFileURL } from 'node:url';
import { installSignalHandlers } from '../lib/lifecycle.js';
import { SyncScheduler } from '../warehouse/sync-scheduler.js';
import { createProcessContext, runMain, type ProcessContext } from './context.js';

/**
 * Starts the node-cron scheduler for recurring warehouse syncs. Any number of scheduler processes
 * may run: a slot's run is created once (unique per import and slot), so none double-fires.
 */
export async function startScheduler(ctx: ProcessContext): Promise<SyncScheduler> {
  const scheduler = new SyncScheduler({
    db: ctx.db,
    queues: ctx.queues,
    log: ctx.log.child({ process: 'scheduler' }),
    refreshMs: ctx.config.SCHEDULER_REFRESH_SEC * 1000,
    timezone: ctx.config.SCHEDULER_TIMEZONE,
  });
  await scheduler.start();
  ctx.lifecycle.register('scheduler', () => scheduler.stop());
  return scheduler;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const ctx = await createProcessContext();
    installSignalHandlers(ctx.lifecycle, ctx.config.SHUTDOWN_TIMEOUT_MS, ctx.log);
    await startScheduler(ctx);
  });
}

/**
 * Recurring warehouse syncs. Every SCHEDULER_REFRESH_SEC the scheduler re-reads the imports that
 * have a schedule and are not paused, and keeps one node-cron task per import. When a task ticks,
 * the tick's scheduled time (to the second) is the slot: the scheduler re-reads the import
 * (paused or deleted since? skip) and creates the slot's run through `triggerRun`. The run table's
 * unique (import, slot) key makes any number of schedulers safe: the first insert wins, the
 * others find the slot taken and do nothing — no leader election, no double firing.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Db } from '../db/knex.js';
import { findImport, listScheduledImports } from '../db/warehouse.repo.js';
import { latestSlotBetween, scheduleCron } from '../domain/sync-schedule.js';
import { latestScheduledSlots } from '../db/sync-runs.repo.js';
import { errorMessage, NotFoundError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { JobQueues } from '../queue/queues.js';
import { triggerRun } from './runs.service.js';

export interface SchedulerOptions {
  db: Db;
  queues: JobQueues;
  log: Logger;
  refreshMs: number;
  timezone: string;
}

interface Entry {
  cron: string;
  task: ScheduledTask;
}

export type SlotOutcome = 'created' | 'taken' | 'skipped' | 'not-scheduled';

export class SyncScheduler {
  private readonly tasks = new Map<number, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private stopped = false;
  /** Whether the first refresh (which runs missed slots once) has happened. */
  private caughtUp = false;

  constructor(private readonly opts: SchedulerOptions) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.opts.refreshMs);
    this.timer.unref();
    this.opts.log.info({ imports: this.tasks.size, refreshMs: this.opts.refreshMs, timezone: this.opts.timezone }, 'scheduler started');
  }

  /** Imports with a live task (for tests and logs). */
  scheduled(): number[] {
    return [...this.tasks.keys()];
  }

  /** Re-reads the scheduled imports; adds, replaces and removes tasks. Never throws. */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const imports = await listScheduledImports(this.opts.db);
        const seen = new Set<number>();
        const catchUp = !this.caughtUp;
        const lastSlots = catchUp ? await latestScheduledSlots(this.opts.db) : new Map<number, number>();
        for (const imp of imports) {
          if (this.stopped) return;
          // One import's bad schedule (stored before validation tightened, or a node-cron surprise)
          // must not keep every other project's imports from being scheduled.
          try {
            const s = scheduleCron(imp.schedule);
            if (!s.ok || s.cron === null) continue;
            seen.add(imp.id);
            const cur = this.tasks.get(imp.id);
            if (cur?.cron === s.cron) continue;
            if (cur) await cur.task.destroy();
            this.tasks.delete(imp.id);
            const task = cron.schedule(s.cron, (c) => void this.fire(imp.id, c.date), {
              timezone: this.opts.timezone,
              name: `warehouse-import-${imp.id}`,
              // A tick that lands while the previous one of this import is still inserting would only find its slot taken.
              noOverlap: false,
            });
            this.tasks.set(imp.id, { cron: s.cron, task });
            if (catchUp) await this.catchUp(imp.id, s.cron, Math.max(imp.updatedAt, lastSlots.get(imp.id) ?? 0));
          } catch (err) {
            this.opts.log.error({ importId: imp.id, err: errorMessage(err) }, 'scheduler: could not schedule this import; the others are unaffected');
          }
        }
        this.caughtUp = true;
        for (const [id, entry] of this.tasks) {
          if (!seen.has(id)) {
            await entry.task.destroy();
            this.tasks.delete(id);
          }
        }
      } catch (err) {
        this.opts.log.warn({ err: errorMessage(err) }, 'scheduler: refresh failed; keeping the current schedule');
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /**
   * On the scheduler's return: the latest slot it missed while down (after the import's last
   * scheduled slot and its last change) runs once — not once per missed slot, and not never. Any
   * number of returning schedulers agree on that slot, so the slot key keeps it to one run.
   */
  private async catchUp(importId: number, cronExpr: string, afterMs: number): Promise<void> {
    const slot = latestSlotBetween(cronExpr, this.opts.timezone, afterMs, Date.now());
    if (slot === undefined) return;
    this.opts.log.info({ importId, slot: new Date(slot).toISOString() }, 'scheduler: running the latest slot missed while down');
    await this.fire(importId, new Date(slot));
  }

  /** One tick of an import's schedule: create the slot's run unless another scheduler did. */
  async fire(importId: number, date: Date): Promise<SlotOutcome> {
    const slot = Math.floor(date.getTime() / 1000) * 1000;
    const log = this.opts.log.child({ importId, slot: new Date(slot).toISOString() });
    try {
      const imp = await findImport(this.opts.db, importId);
      const s = imp ? scheduleCron(imp.definition.schedule) : undefined;
      if (!imp || imp.paused || !s?.ok || s.cron === null) {
        log.info('scheduler: import no longer scheduled (deleted, paused or api_only); tick ignored');
        return 'not-scheduled';
      }
      const out = await triggerRun(this.opts, imp, 'scheduled', slot);
      const outcome: SlotOutcome = out.created ? 'created' : out.skipped ? 'skipped' : 'taken';
      log.info({ runId: out.run.id, outcome }, `scheduler: slot ${outcome}`);
      return outcome;
    } catch (err) {
      if (err instanceof NotFoundError) {
        log.info('scheduler: import deleted while its slot fired; tick ignored');
        return 'not-scheduled';
      }
      log.error({ err: errorMessage(err) }, 'scheduler: could not create the slot run');
      return 'not-scheduled';
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    for (const { task } of this.tasks.values()) await task.destroy();
    this.tasks.clear();
  }
}

/**
 * Recurring warehouse syncs. Every SCHEDULER_REFRESH_SEC the scheduler re-reads the imports that
 * have a schedule and are not paused, and keeps one node-cron task per import. When a task ticks,
 * the tick's scheduled time (to the second) is the slot: the scheduler re-reads the import
 * (paused or deleted since? skip) and creates the slot's run through `triggerRun`. The run table's
 * unique (import, slot) key makes any number of schedulers safe: the first insert wins, the
 * others find the slot taken and do nothing — no leader election, no double firing.
 *
 * A tick can be missed while the process runs: node-cron drops a tick that comes more than a
 * second late (a GC or CPU stall, a paused VM, a clock step, a long synchronous refresh). So every
 * refresh, not only the first, runs the latest slot of each import that has no run yet — once,
 * as after a restart — and leaves the last GRACE_MS to the live ticks.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
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
  /** The clock missed slots are looked for by (tests set it; node-cron's ticks keep the real one). */
  clock?: () => number;
}

interface Entry {
  cron: string;
  task: ScheduledTask;
}

export type SlotOutcome = 'created' | 'taken' | 'skipped' | 'not-scheduled';

/** How long a slot belongs to its live tick before a refresh takes it for missed. */
const GRACE_MS = 5_000;

export class SyncScheduler {
  private readonly tasks = new Map<number, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private stopped = false;
  /** Per import, up to when a refresh has looked for missed slots (so a refresh walks only the time since). */
  private readonly checkedUpTo = new Map<number, number>();

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
        const lastSlots = await latestScheduledSlots(this.opts.db);
        for (const imp of imports) {
          if (this.stopped) return;
          // Ticks of the imports already scheduled, and a web server in the same process, go on
          // between imports: the first walk back over days of an old import's slots takes a while.
          await yieldToEventLoop();
          // One import's bad schedule (stored before validation tightened, or a node-cron surprise)
          // must not keep every other project's imports from being scheduled.
          try {
            const s = scheduleCron(imp.schedule);
            if (!s.ok || s.cron === null) continue;
            seen.add(imp.id);
            const cur = this.tasks.get(imp.id);
            if (cur?.cron !== s.cron) {
              if (cur) await cur.task.destroy();
              this.tasks.delete(imp.id);
              this.tasks.set(imp.id, { cron: s.cron, task: this.schedule(imp.id, s.cron) });
            }
            await this.catchUp(imp.id, s.cron, Math.max(imp.updatedAt, lastSlots.get(imp.id) ?? 0, this.checkedUpTo.get(imp.id) ?? 0));
          } catch (err) {
            this.opts.log.error({ importId: imp.id, err: errorMessage(err) }, 'scheduler: could not schedule this import; the others are unaffected');
          }
        }
        for (const [id, entry] of this.tasks) {
          if (!seen.has(id)) {
            await entry.task.destroy();
            this.tasks.delete(id);
            this.checkedUpTo.delete(id);
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

  private schedule(importId: number, cronExpr: string): ScheduledTask {
    const task = cron.schedule(cronExpr, (c) => void this.fire(importId, c.date), {
      timezone: this.opts.timezone,
      name: `warehouse-import-${importId}`,
      // A tick that lands while the previous one of this import is still inserting would only find its slot taken.
      noOverlap: false,
      // node-cron's own warning goes to the console; this one is a log line, and the next refresh runs the slot.
      suppressMissedWarning: true,
    });
    task.on('execution:missed', (c) =>
      this.opts.log.warn({ importId, slot: c.date.toISOString() }, 'scheduler: tick missed (the process was busy or paused); the next refresh runs the latest missed slot'),
    );
    return task;
  }

  /**
   * The latest slot missed (after the import's last scheduled slot, its last change and the last
   * look) runs once — not once per missed slot, and not never: while the scheduler was down, or
   * a tick node-cron dropped. Any number of schedulers agree on that slot, so the slot key keeps
   * it to one run.
   */
  private async catchUp(importId: number, cronExpr: string, afterMs: number): Promise<void> {
    const upTo = (this.opts.clock ?? Date.now)() - GRACE_MS;
    const slot = latestSlotBetween(cronExpr, this.opts.timezone, afterMs, upTo);
    this.checkedUpTo.set(importId, Math.max(afterMs, upTo));
    if (slot === undefined) return;
    this.opts.log.info({ importId, slot: new Date(slot).toISOString() }, 'scheduler: running the latest slot that no tick ran (missed while down or busy)');
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

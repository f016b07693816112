/**
 * Looks at each of a runtime's queues every threshold/6 and asks the runtime to replace a worker
 * whose fetch loop is wedged (the rule is src/domain/fetch-stall.ts). A look that fails (Redis
 * down, or slower than 2 s) breaks the streak: nothing can be fetched during an outage, and the
 * threshold counts again from the first look after it.
 */
import { errorMessage } from '../src/lib/errors.js';
import type { Logger } from '../src/lib/logger.js';
import { withTimeout } from '../src/lib/with-timeout.js';
import { nextStallStreak, type StallStreak } from '../src/domain/fetch-stall.js';
import type { QueueName } from '../src/queue/catalog.js';
import type { JobQueues } from '../src/queue/queues.js';

const LOOK_TIMEOUT_MS = 2000;

export interface FetchWatchdogDeps {
  queues: JobQueues;
  queueNames: readonly QueueName[];
  thresholdMs: number;
  /** This runtime's side of a queue: nothing running, and how many jobs it has started. */
  workerState: (queue: QueueName) => { idle: boolean; started: number };
  replace: (queue: QueueName) => Promise<void>;
  log: Logger;
}

export class FetchWatchdog {
  private readonly streaks = new Map<QueueName, StallStreak | null>();
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<void> | undefined;

  constructor(private readonly deps: FetchWatchdogDeps) {}

  start(): void {
    const every = Math.max(200, Math.floor(this.deps.thresholdMs / 6));
    this.timer = setInterval(() => {
      this.looking ??= this.look().finally(() => (this.looking = undefined));
    }, every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.looking;
  }

  private async look(): Promise<void> {
    for (const queue of this.deps.queueNames) {
      let waiting: boolean;
      try {
        waiting = await withTimeout(this.hasWaitingJobs(queue), LOOK_TIMEOUT_MS);
      } catch (err) {
        this.deps.log.debug({ err: errorMessage(err), queue }, 'fetch watchdog could not look at the queue');
        this.streaks.set(queue, null);
        continue;
      }
      // Read after the count: a job started in between changes `started` and breaks the streak.
      const { idle, started } = this.deps.workerState(queue);
      const next = nextStallStreak(this.streaks.get(queue) ?? null, { at: Date.now(), waiting, idle, started }, this.deps.thresholdMs);
      this.streaks.set(queue, next.wedged ? null : next.streak);
      if (next.wedged) await this.deps.replace(queue);
    }
  }

  private async hasWaitingJobs(queue: QueueName): Promise<boolean> {
    const q = this.deps.queues.queues[queue];
    if (await q.isPaused()) return false;
    const counts = await q.getJobCounts('wait', 'prioritized');
    return (counts.wait ?? 0) + (counts.prioritized ?? 0) > 0;
  }
}

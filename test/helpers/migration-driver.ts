/**
 * Runs the migration queue's jobs in this process by calling the registered handlers directly
 * (the thin-transport rule makes that the same code path as the worker), taking the jobs from
 * the real BullMQ queue in Redis so the fan-out, job ids and enqueue order are the real ones.
 */
import { eventStoreOf } from './events.js';
import { storeOutageCheck } from '../../src/store/store-outage.js';
import type { Job } from 'bullmq';
import type { Config } from '../../config/index.js';
import { handlers } from '../../jobs/index.js';
import type { JobContext } from '../../jobs/types.js';
import type { Db } from '../../src/db/knex.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { catalogNameOf, type JobName } from '../../src/queue/catalog.js';
import type { JobQueues } from '../../src/queue/queues.js';

export interface DriveOptions {
  /** Called before each job; return an AbortSignal to interrupt that job. */
  signalFor?: (job: Job) => AbortSignal | undefined;
  /** Stop after this many jobs (to leave work for a later drive). */
  maxJobs?: number;
}

export interface DriveResult {
  jobs: { id: string; name: string; outcome: unknown; error?: string }[];
}

export function jobContext(db: Db, config: Config, queues: JobQueues, job: Job, signal: AbortSignal, attempt = 1): JobContext {
  const events = eventStoreOf(db);
  return {
    db,
    events,
    storeOutage: storeOutageCheck(db, events),
    log: silentLogger,
    config,
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    signal,
    attempt,
    jobId: job.id!,
    // Best effort, as in the worker runtime: the dashboard must not fail a job.
    progress: async (v) => void (await job.updateProgress(v).catch(() => {})),
    logLine: async (line) => void (await job.log(line).catch(() => {})),
  };
}

/** Runs waiting migration jobs (FIFO) until none is left; a failing job is recorded and removed. */
export async function driveMigrationQueue(db: Db, config: Config, queues: JobQueues, options: DriveOptions = {}): Promise<DriveResult> {
  const queue = queues.queues.migration;
  const result: DriveResult = { jobs: [] };
  for (;;) {
    const waiting = (await queue.getJobs(['waiting', 'prioritized'], 0, 0, true)) as Job[];
    const job = waiting[0];
    if (!job) return result;
    if (options.maxJobs !== undefined && result.jobs.length >= options.maxJobs) return result;
    const name = catalogNameOf(job.name) as JobName;
    const handler = handlers[name] as ((p: unknown, c: JobContext) => Promise<unknown>) | undefined;
    if (!handler) throw new Error(`no handler for ${job.name}`);
    const signal = options.signalFor?.(job) ?? new AbortController().signal;
    try {
      const outcome = await handler(job.data, jobContext(db, config, queues, job, signal));
      result.jobs.push({ id: job.id!, name, outcome });
    } catch (err) {
      result.jobs.push({ id: job.id!, name, outcome: undefined, error: err instanceof Error ? err.message : String(err) });
    }
    await job.remove();
  }
}

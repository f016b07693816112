/**
 * Typed enqueueing over BullMQ. One Queue per queue name under the configured prefix; payloads
 * are parsed against the catalog before they reach Redis.
 */
import { Queue, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { jobCatalog, QUEUE_NAMES, type JobName, type JobPayload, type QueueName } from './catalog.js';

export interface EnqueueOptions {
  /** Deterministic id: enqueueing the same id twice is a no-op while the job exists. */
  jobId: string;
  delayMs?: number;
}

/** Finished jobs are trimmed by age and count so Redis does not grow without bound. */
export const RETENTION = {
  removeOnComplete: { age: 7 * 24 * 3600, count: 1000 },
  removeOnFail: { age: 14 * 24 * 3600, count: 5000 },
  /** Dashboard log lines kept per job (the SQL run keeps its own bounded log). */
  keepLogs: 500,
} as const;

/** The states a queue depth is reported for. */
export const DEPTH_STATES = ['waiting', 'delayed', 'active', 'prioritized', 'failed'] as const;

export function redisConnection(url: string): Redis {
  // BullMQ workers need maxRetriesPerRequest null; blocking commands must not time out.
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

export class JobQueues {
  readonly queues: Record<QueueName, Queue>;

  constructor(
    readonly connection: Redis,
    readonly prefix: string,
  ) {
    this.queues = Object.fromEntries(
      QUEUE_NAMES.map((name) => [name, new Queue(name, { connection, prefix })]),
    ) as Record<QueueName, Queue>;
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, options: EnqueueOptions): Promise<string> {
    const entry = jobCatalog[name];
    const data = entry.payload.parse(payload);
    const opts: JobsOptions = {
      jobId: options.jobId,
      attempts: entry.attempts,
      backoff: { type: 'exponential', delay: entry.backoffMs },
      delay: options.delayMs,
      ...RETENTION,
    };
    const job = await this.queues[entry.queue].add(name, data, opts);
    return job.id ?? options.jobId;
  }

  /** The job with this id in the queue of job name `name`, if Redis has it. */
  async getJob<N extends JobName>(name: N, jobId: string): Promise<Job | undefined> {
    return (await this.queues[jobCatalog[name].queue].getJob(jobId)) ?? undefined;
  }

  /** Jobs per queue and state, for the queue depth gauge. */
  async depth(): Promise<Record<QueueName, Record<string, number>>> {
    const entries = await Promise.all(
      QUEUE_NAMES.map(async (name) => [name, await this.queues[name].getJobCounts(...DEPTH_STATES)] as const),
    );
    return Object.fromEntries(entries) as Record<QueueName, Record<string, number>>;
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.queues).map((q) => q.close()));
  }
}

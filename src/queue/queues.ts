/**
 * Typed enqueueing over BullMQ. One Queue per queue name under the configured prefix; payloads
 * are parsed against the catalog before they reach Redis.
 */
import { FlowProducer, Queue, type FlowJob, type Job, type JobsOptions } from 'bullmq';
import { jobCatalog, jobDisplayName, QUEUE_NAMES, type JobName, type JobPayload, type QueueName } from './catalog.js';
import type { Logger } from '../lib/logger.js';
import type { RedisClient, RedisConnections } from './redis-connection.js';

export interface EnqueueOptions {
  /** Deterministic id: enqueueing the same id twice is a no-op while the job exists. */
  jobId: string;
  delayMs?: number;
  /** Whose job this is, shown in the dashboard after the catalog name (see jobDisplayName). */
  label?: string;
}

/** One job of a flow: a catalog name, its payload and enqueue options. */
export interface FlowStep<N extends JobName = JobName> {
  name: N;
  payload: JobPayload<N>;
  options: EnqueueOptions;
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

/**
 * The queues of one deployment, on the connections of src/queue/redis-connection.ts (plain Redis
 * or a cluster). It owns them: close() closes the queues, then the shared client.
 */
export class JobQueues {
  readonly queues: Record<QueueName, Queue>;
  /** The shared client (lock keys, dashboard); new BullMQ objects take `redis.connect()` or this. */
  readonly connection: RedisClient;
  /** BullMQ prefix (hash-tagged on a cluster): pass it to every Queue, Worker, QueueEvents, FlowProducer. */
  readonly prefix: string;

  /**
   * `log`: where the queues' Redis errors go, one line each (deduplicated: see errorReporter).
   * Without an 'error' listener BullMQ console.error()s a multi-line stack per error, between the
   * JSON log lines, all through a Redis outage. Omitted (tests, tools): dropped.
   */
  constructor(
    readonly redis: RedisConnections,
    log?: Pick<Logger, 'warn'>,
  ) {
    const connection = redis.client;
    const prefix = redis.prefix;
    this.connection = connection;
    this.prefix = prefix;
    this.onError = errorReporter(log);
    this.queues = Object.fromEntries(
      QUEUE_NAMES.map((name) => {
        const queue = new Queue(name, { connection, prefix });
        queue.on('error', (err) => this.onError(name, err));
        return [name, queue];
      }),
    ) as Record<QueueName, Queue>;
  }

  private readonly onError: (source: string, err: Error) => void;

  private flows: FlowProducer | undefined;

  private jobOptions(name: JobName, options: EnqueueOptions): JobsOptions {
    const entry = jobCatalog[name];
    return {
      jobId: options.jobId,
      attempts: entry.attempts,
      backoff: { type: 'exponential', delay: entry.backoffMs },
      delay: options.delayMs,
      ...RETENTION,
    };
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, options: EnqueueOptions): Promise<string> {
    const entry = jobCatalog[name];
    const data = entry.payload.parse(payload);
    const job = await this.queues[entry.queue].add(jobDisplayName(name, options.label), data, this.jobOptions(name, options));
    return job.id ?? options.jobId;
  }

  /**
   * A BullMQ flow: the parent runs once every child completed; a child that fails for good fails
   * the parent (failParentOnFailure), so the dashboard shows a failed run as failed. Ids are
   * deterministic like every job's; SQL, not the flow, decides when a run is finished.
   */
  async enqueueFlow(parent: FlowStep, children: FlowStep[]): Promise<void> {
    if (!this.flows) {
      this.flows = new FlowProducer({ connection: this.connection, prefix: this.prefix });
      this.flows.on('error', (err) => this.onError('flows', err));
    }
    const step = (s: FlowStep, child: boolean): FlowJob => ({
      name: jobDisplayName(s.name, s.options.label),
      queueName: jobCatalog[s.name].queue,
      data: jobCatalog[s.name].payload.parse(s.payload),
      opts: { ...this.jobOptions(s.name, s.options), ...(child ? { failParentOnFailure: true } : {}) },
    });
    await this.flows.add({ ...step(parent, false), children: children.map((c) => step(c, true)) });
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
    await this.flows?.close();
    await Promise.all(Object.values(this.queues).map((q) => q.close()));
    await this.redis.close();
  }
}

/** The same error of the same queue is logged at most once per this window (an outage repeats it every reconnect). */
export const QUEUE_ERROR_LOG_WINDOW_MS = 60_000;

/** One warn line per distinct (source, message) per window, saying how often it repeated meanwhile. */
function errorReporter(log: Pick<Logger, 'warn'> | undefined, now: () => number = Date.now): (source: string, err: Error) => void {
  const seen = new Map<string, { at: number; repeated: number }>();
  return (source, err) => {
    if (!log) return;
    const key = `${source}\u0000${err.message}`;
    const last = seen.get(key);
    if (last && now() - last.at < QUEUE_ERROR_LOG_WINDOW_MS) {
      last.repeated += 1;
      return;
    }
    seen.set(key, { at: now(), repeated: 0 });
    if (seen.size > 100) seen.delete(seen.keys().next().value!);
    log.warn({ queue: source, err: err.message, repeated: last?.repeated ?? 0 }, 'queue: Redis error');
  };
}

/**
 * The worker runtime: one BullMQ Worker per queue, each job a few lines of transport — parse the
 * payload against the catalog, build a JobContext, call the handler — with the error edges
 * mapped here and nowhere else:
 *
 * - PermanentError (or an unparsable payload / unknown job name) → UnrecoverableError: no retry.
 * - Shutdown (close()): the signal every handler holds is aborted; whatever the handler then
 *   does (checkpoint and return, or throw), the job goes back to `wait` without using an attempt,
 *   so another worker (or this one after a restart) resumes it at once.
 * - An outage of our own stores (src/store/store-outage.ts) delays the job without using an
 *   attempt, waiting longer each time: a database or ClickHouse down for an hour fails no run.
 * - The catalog's timeout aborts the handler's signal and counts as a failed (retried) attempt.
 * - A lost lock (Redis lost the job) aborts that handler's signal too; SQL fencing in the
 *   handler keeps a second copy of the job from doubling anything.
 */
import { DelayedError, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import type { Config } from '../config/index.js';
import type { EventStore } from '../src/store/event-store.js';
import type { Db } from '../src/db/knex.js';
import { errorMessage, RetryableError } from '../src/lib/errors.js';
import { classifyError, outageWaitMs } from '../src/runs/failure.js';
import type { Logger } from '../src/lib/logger.js';
import { jobsTotal, workerFetchRestarts } from '../src/lib/metrics.js';
import { withTimeout } from '../src/lib/with-timeout.js';
import type { SecretBox } from '../src/lib/secrets.js';
import { catalogNameOf, isJobName, jobCatalog, QUEUE_NAMES, type JobName, type QueueName } from '../src/queue/catalog.js';
import type { JobQueues } from '../src/queue/queues.js';
import type { RedisClient } from '../src/queue/redis-connection.js';
import { logLine } from '../src/domain/sync-log.js';
import { storeOutageCheck, type StoreOutageCheck } from '../src/store/store-outage.js';
import { boardProgress, doneProgress, shownPercent, type Progress, type ReportedProgress } from '../src/runs/board-progress.js';
import { FetchWatchdog } from './fetch-watchdog.js';
import type { JobContext, JobHandler } from './types.js';

export type HandlerMap = Partial<{ [N in JobName]: JobHandler<N> }>;

export interface WorkerRuntimeDeps {
  config: Config;
  db: Db;
  events: EventStore;
  log: Logger;
  secrets: SecretBox;
  queues: JobQueues;
  handlers: HandlerMap;
  /** Which queues to work (default: all three). */
  queueNames?: readonly QueueName[];
}

type Outcome = 'completed' | 'failed' | 'retry' | 'waiting' | 'interrupted' | 'invalid';

class TimeoutReason extends Error {}
class LockLostReason extends Error {}

/** A queue's current BullMQ Worker, its own connection, and the signal that retires it. */
interface WorkerSlot {
  worker: Worker;
  connection: RedisClient;
  retired: AbortController;
}

export class WorkerRuntime {
  private readonly slots = new Map<QueueName, WorkerSlot>();
  private readonly shutdown = new AbortController();
  /** Per running job: aborts that job's handler only (timeout, lost lock). */
  private readonly running = new Map<string, AbortController>();
  /** Jobs started per queue since start (the fetch watchdog's sign of life). */
  private readonly started = new Map<QueueName, number>();
  private watchdog: FetchWatchdog | undefined;
  /** Replaced workers still closing (bounded; see retire). */
  private readonly retiring = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;
  private readonly storeOutage: StoreOutageCheck;

  constructor(private readonly deps: WorkerRuntimeDeps) {
    this.storeOutage = storeOutageCheck(deps.db, deps.events);
  }

  private get queueNames(): readonly QueueName[] {
    return this.deps.queueNames ?? QUEUE_NAMES;
  }

  /** The current BullMQ Worker of each queue (a replaced one is no longer here). */
  get workers(): Worker[] {
    return [...this.slots.values()].map((s) => s.worker);
  }

  start(): this {
    const { config, log } = this.deps;
    for (const queue of this.queueNames) this.slots.set(queue, this.openSlot(queue));
    if (config.WORKER_FETCH_WATCHDOG_MS > 0) {
      this.watchdog = new FetchWatchdog({
        queues: this.deps.queues,
        queueNames: this.queueNames,
        thresholdMs: config.WORKER_FETCH_WATCHDOG_MS,
        workerState: (queue) => ({ idle: !this.hasRunning(queue), started: this.started.get(queue) ?? 0 }),
        replace: (queue) => this.replace(queue),
        log,
      });
      this.watchdog.start();
    }
    log.info({ queues: this.queueNames, concurrency: config.WORKER_CONCURRENCY }, 'worker started');
    return this;
  }

  private openSlot(queue: QueueName): WorkerSlot {
    const { config, log } = this.deps;
    const connection = this.deps.queues.redis.connect();
    connection.on('error', (err) => log.warn({ err: errorMessage(err), queue }, 'worker redis connection error'));
    const retired = new AbortController();
    const worker = new Worker(queue, (job, token) => this.process(queue, job, token, retired.signal), {
      connection,
      prefix: this.deps.queues.prefix,
      concurrency: Math.max(1, queue === 'migration' ? config.MIGRATION_DAY_CONCURRENCY : config.WORKER_CONCURRENCY),
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.JOB_LOCK_MS,
      maxStalledCount: config.JOB_MAX_STALLED_COUNT,
      autorun: true,
    });
    worker.on('error', (err) => log.warn({ err: errorMessage(err), queue }, 'worker error'));
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) this.running.get(`${queue}/${id}`)?.abort(new LockLostReason(`lost the lock on job ${id}`));
    });
    worker.on('stalled', (jobId) => log.warn({ queue, jobId }, 'job stalled (its worker died); moved back to wait'));
    return { worker, connection, retired };
  }

  private hasRunning(queue: QueueName): boolean {
    for (const key of this.running.keys()) if (key.startsWith(`${queue}/`)) return true;
    return false;
  }

  /**
   * A new Worker (and connection) for a queue whose fetch loop is wedged. Only an idle worker is
   * replaced, so no handler is cut off; a job the old loop still hands over later goes back to
   * `wait` (retired). The old one is closed in the background and for at most 5 s: BullMQ's
   * close can wait forever on a blocking connection that never reconnects (bullmq#4656).
   */
  private async replace(queue: QueueName): Promise<void> {
    const old = this.slots.get(queue);
    if (!old || this.closing) return;
    old.retired.abort();
    const fresh = this.openSlot(queue);
    this.slots.set(queue, fresh);
    workerFetchRestarts.inc({ queue });
    this.deps.log.warn({ queue, thresholdMs: this.deps.config.WORKER_FETCH_WATCHDOG_MS }, 'worker took no job while jobs waited; replaced it with a new one');
    const closing = retire(old).finally(() => this.retiring.delete(closing));
    this.retiring.add(closing);
    await withTimeout(fresh.worker.waitUntilReady(), 10_000).catch((err) => this.deps.log.warn({ err: errorMessage(err), queue }, 'replacement worker not ready yet'));
  }

  /** Resolves once every worker has picked up its connection (tests wait on this). */
  async ready(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /**
   * Graceful stop: take no new jobs, abort the running handlers' signal so they checkpoint, wait
   * for them to hand their jobs back, then close the connections. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.shutdown.abort(new Error('worker shutting down'));
      // Close the BullMQ workers in the same tick as the abort, before anything is awaited: a
      // Worker fetches its next job as soon as a handler returns unless it is already closing,
      // and that fetch would take the job the handler has just handed back to `wait`.
      const slots = [...this.slots.values()];
      const closed = Promise.all(slots.map((s) => s.worker.close().catch((err) => this.deps.log.warn({ err: errorMessage(err) }, 'worker close failed'))));
      await this.watchdog?.stop();
      await closed;
      await Promise.all(slots.map((s) => s.connection.quit().catch(() => s.connection.disconnect())));
      await Promise.all(this.retiring);
      this.deps.log.info('worker stopped');
    })();
    return this.closing;
  }

  private count(queue: QueueName, outcome: Outcome): void {
    jobsTotal.inc({ queue, outcome });
  }

  private async process(queue: QueueName, job: Job, token: string | undefined, retired: AbortSignal): Promise<unknown> {
    this.started.set(queue, (this.started.get(queue) ?? 0) + 1);
    const attempt = job.attemptsMade + 1;
    const log = this.deps.log.child({ jobId: job.id, jobName: job.name, queue, attempt });
    const catalogName = catalogNameOf(job.name);
    if (!isJobName(catalogName)) {
      this.count(queue, 'invalid');
      throw new UnrecoverableError(`unknown job name '${job.name}'`);
    }
    const name: JobName = catalogName;
    const entry = jobCatalog[name];
    const parsed = entry.payload.safeParse(job.data);
    if (!parsed.success) {
      this.count(queue, 'invalid');
      throw new UnrecoverableError(`payload does not match the catalog: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    const handler = this.deps.handlers[name] as JobHandler<JobName> | undefined;
    if (!handler) {
      // A worker of an older release may not know this job yet: let another attempt find one that does.
      this.count(queue, 'retry');
      throw new Error(`no handler for '${name}' in this worker`);
    }

    // A fetch already in flight when close() began (or when its worker was replaced) can still
    // hand us a job: give it straight back.
    if (this.shutdown.signal.aborted || retired.aborted) return this.handBack(queue, job, token, log);

    const key = `${queue}/${job.id}`;
    const own = new AbortController();
    this.running.set(key, own);
    const signal = AbortSignal.any([this.shutdown.signal, own.signal]);
    const timer = setTimeout(() => own.abort(new TimeoutReason(`timed out after ${entry.timeoutMs} ms`)), entry.timeoutMs);
    timer.unref();

    let shown: Progress | undefined;
    const ctx: JobContext = {
      db: this.deps.db,
      events: this.deps.events,
      log,
      config: this.deps.config,
      secrets: this.deps.secrets,
      queues: this.deps.queues,
      signal,
      storeOutage: this.storeOutage,
      attempt,
      jobId: job.id!,
      // The dashboard is best effort: SQL is the record, so a Redis hiccup must not fail the job.
      progress: async (value) => {
        shown = value;
        await job.updateProgress(boardProgress(value)).catch((err) => log.debug({ err: errorMessage(err) }, 'progress not recorded'));
      },
      parentProgress: job.parent ? (value) => this.parentProgress(job, value, log) : undefined,
      logLine: async (line) => {
        await job.log(logLine(Date.now(), line)).catch((err) => log.debug({ err: errorMessage(err) }, 'log line not recorded'));
      },
    };

    const started = Date.now();
    log.info({ payload: parsed.data }, 'job started');
    try {
      let result: unknown;
      try {
        result = await handler(parsed.data as never, ctx);
      } catch (err) {
        if (classifyError(err) === 'permanent') {
          this.count(queue, 'failed');
          log.error({ err: errorMessage(err) }, 'job failed permanently');
          throw new UnrecoverableError(errorMessage(err));
        }
        if (this.shutdown.signal.aborted) return await this.handBack(queue, job, token, log);
        const reason = own.signal.reason as unknown;
        // A timed-out or lock-lost handler (own signal aborted) is not waiting on an outage.
        if (!own.signal.aborted && (await this.storeOutage(err)) && (await this.waitOutOutage(queue, job, token, err, ctx))) throw new DelayedError();
        const final = attempt >= entry.attempts;
        this.count(queue, final ? 'failed' : 'retry');
        if (reason instanceof TimeoutReason) {
          log.error({ ms: Date.now() - started }, 'job timed out');
          throw new RetryableError(reason.message);
        }
        log[final ? 'error' : 'warn']({ err: errorMessage(err), final }, 'job attempt failed');
        throw err;
      }
      if (this.shutdown.signal.aborted) return await this.handBack(queue, job, token, log);
      if (own.signal.aborted) {
        // Timed out or lost its lock but returned anyway: not a completion we can trust.
        this.count(queue, 'retry');
        throw new RetryableError(errorMessage(own.signal.reason));
      }
      this.count(queue, 'completed');
      // A completed job has done all of its part (a partition of its range, a plan its split):
      // its ring reads 100 %, whatever its last report was measured against.
      if (shownPercent(shown) !== 100) {
        await job.updateProgress(boardProgress(doneProgress(shown))).catch((err) => log.debug({ err: errorMessage(err) }, 'progress not recorded'));
      }
      log.info({ ms: Date.now() - started }, 'job completed');
      return result;
    } finally {
      clearTimeout(timer);
      this.running.delete(key);
    }
  }

  /** A flow child's view of its parent's progress (best effort, like progress). */
  private async parentProgress(job: Job, value: ReportedProgress, log: Logger): Promise<void> {
    try {
      const parentQueue = job.parent!.queueKey.slice(this.deps.queues.prefix.length + 1) as QueueName;
      const parent = await this.deps.queues.queues[parentQueue]?.getJob(job.parent!.id!);
      await parent?.updateProgress(boardProgress(value));
    } catch (err) {
      log.debug({ err: errorMessage(err) }, 'parent progress not recorded');
    }
  }

  /**
   * Our own store is out: the job goes to `delayed` without using an attempt, and waits longer
   * after each outage in a row (starts that used no attempt: these waits, hand-backs, stalls).
   * False when Redis would not take the move either: the failure then counts as usual.
   */
  private async waitOutOutage(queue: QueueName, job: Job, token: string | undefined, err: unknown, ctx: JobContext): Promise<boolean> {
    const waitMs = outageWaitMs(this.deps.config.JOB_OUTAGE_RETRY_MS, job.attemptsStarted - job.attemptsMade - 1);
    try {
      await job.moveToDelayed(Date.now() + waitMs, token);
    } catch (moveErr) {
      ctx.log.warn({ err: errorMessage(moveErr) }, 'could not delay the job for the outage; the failure counts as an attempt');
      return false;
    }
    this.count(queue, 'waiting');
    const line = `store unavailable (${errorMessage(err)}): trying again in ${Math.round(waitMs / 1000)} s; not counted as an attempt`;
    ctx.log.warn({ err: errorMessage(err), waitMs }, 'store unavailable; job waits without using an attempt');
    await ctx.logLine(line);
    return true;
  }

  /** Puts a job interrupted by shutdown back to `wait` without using an attempt. */
  private async handBack(queue: QueueName, job: Job, token: string | undefined, log: Logger): Promise<never> {
    this.count(queue, 'interrupted');
    try {
      await job.moveToWait(token);
      log.info('job handed back to the queue (shutdown or a replaced worker)');
    } catch (err) {
      // The lock is gone (Redis lost the job): the reconciler re-enqueues the run from SQL.
      log.warn({ err: errorMessage(err) }, 'could not hand the job back; the reconciler will');
    }
    throw new WaitingError();
  }
}

/** Closes a replaced worker and its connection, bounded (see replace). */
async function retire(slot: WorkerSlot): Promise<void> {
  await withTimeout(slot.worker.close(true), 5000).catch(() => undefined);
  slot.connection.disconnect();
}

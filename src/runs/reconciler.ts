/**
 * The reconciler: SQL is the system of record, Redis the transport. On worker start and every
 * RECONCILE_INTERVAL_SEC it asks every run source which runs SQL says are queued or running, and
 * makes Redis agree:
 *
 * | job in Redis (same deterministic id)     | meaning                                   | action                       |
 * |------------------------------------------|-------------------------------------------|------------------------------|
 * | missing (flushed, evicted, trimmed)      | Redis lost it                              | enqueue it again             |
 * | waiting / delayed / active / prioritized | in hand                                    | nothing (BullMQ's stalled check covers a dead worker) |
 * | completed                                | the handler returned without finishing the run (a worker died between, or an old release) | retry the job: handlers are idempotent, it finishes the run |
 * | failed: stalled / started too often      | infrastructure, not the handler's verdict  | retry the job                |
 * | failed: anything else                    | a final verdict SQL did not get             | source.markFailed(reason), or a warning |
 *
 * Several workers may reconcile at once: a Redis lock (SET NX PX) lets one pass run at a time,
 * and every action is idempotent anyway — `add` with an existing id is a no-op, `retry` of a job
 * no longer completed/failed throws and is skipped. A job that finished after SQL was read is
 * left for the next pass, so a run finishing right now is never re-run by a stale read.
 *
 * It takes its sources as a parameter (jobs/reconcile-sources.ts in production) because src/
 * never imports jobs/.
 */
import crypto from 'node:crypto';
import type { Db } from '../db/knex.js';
import { errorMessage } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { jobCatalog } from '../queue/catalog.js';
import type { JobQueues } from '../queue/queues.js';
import { isInfrastructureFailure } from './failure.js';
import type { RunSource, UnfinishedRun } from './run-source.js';

export type { RunSource };
export type ReconcileRun = UnfinishedRun;

export interface ReconcileReport {
  checked: number;
  enqueued: number;
  retried: number;
  markedFailed: number;
  errors: number;
}

export interface ReconcilerOptions {
  db: Db;
  queues: JobQueues;
  log: Logger;
  sources: readonly RunSource[];
  /** 0 disables the periodic pass (start() still runs one). */
  intervalMs: number;
  /** How long one pass may hold the cross-process lock. */
  lockTtlMs?: number;
}

const RELEASE_LOCK = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly opts: ReconcilerOptions) {}

  private get lockKey(): string {
    return `${this.opts.queues.prefix}:reconciler:lock`;
  }

  /** One pass now, then one every intervalMs. */
  start(): void {
    this.tick();
    if (this.opts.intervalMs > 0) {
      this.timer = setInterval(() => this.tick(), this.opts.intervalMs);
      this.timer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.inFlight?.catch(() => {});
  }

  private tick(): void {
    if (this.stopped || this.inFlight) return;
    this.inFlight = this.runOnce()
      .catch((err) => this.opts.log.warn({ err: errorMessage(err) }, 'reconcile pass failed'))
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  /** One pass; undefined when another process holds the pass lock. */
  async runOnce(): Promise<ReconcileReport | undefined> {
    const redis = this.opts.queues.connection;
    const token = crypto.randomUUID();
    const got = await redis.set(this.lockKey, token, 'PX', this.opts.lockTtlMs ?? 60_000, 'NX');
    if (got !== 'OK') return undefined;
    try {
      return await this.pass();
    } finally {
      await redis.eval(RELEASE_LOCK, 1, this.lockKey, token).catch(() => {});
    }
  }

  private async pass(): Promise<ReconcileReport> {
    const report: ReconcileReport = { checked: 0, enqueued: 0, retried: 0, markedFailed: 0, errors: 0 };
    for (const source of this.opts.sources) {
      if (this.stopped) break;
      const readAt = Date.now();
      let runs: ReconcileRun[];
      try {
        runs = await source.findUnfinished(this.opts.db);
      } catch (err) {
        report.errors += 1;
        this.opts.log.warn({ source: source.name, err: errorMessage(err) }, 'reconcile: could not list unfinished runs');
        continue;
      }
      for (const run of runs) {
        report.checked += 1;
        try {
          await this.reconcile(source, run, readAt, report);
        } catch (err) {
          report.errors += 1;
          this.opts.log.warn({ source: source.name, jobId: run.jobId, err: errorMessage(err) }, 'reconcile: run not reconciled');
        }
      }
    }
    if (report.enqueued + report.retried + report.markedFailed + report.errors > 0) this.opts.log.info(report, 'reconcile pass');
    return report;
  }

  private async reconcile(source: RunSource, run: ReconcileRun, readAt: number, report: ReconcileReport): Promise<void> {
    const { queues, log, db } = this.opts;
    const job = await queues.getJob(run.jobName, run.jobId);
    const state = job ? await job.getState() : 'unknown';
    if (!job || state === 'unknown') {
      // A job hash left without its state set (partly deleted keys) would make `add` a no-op.
      if (job) await queues.queues[jobCatalog[run.jobName].queue].remove(run.jobId).catch(() => 0);
      await queues.enqueue(run.jobName, run.payload as never, { jobId: run.jobId, label: run.label });
      report.enqueued += 1;
      log.info({ source: source.name, jobId: run.jobId }, 'reconcile: re-enqueued a run Redis had lost');
      return;
    }
    if (state !== 'completed' && state !== 'failed') return;
    // Finished after we read SQL: SQL may already say so. Leave it to the next pass.
    if ((job.finishedOn ?? 0) >= readAt) return;
    const reason = job.failedReason ?? '';
    if (state === 'completed' || isInfrastructureFailure(reason)) {
      try {
        await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
        report.retried += 1;
        log.info({ source: source.name, jobId: run.jobId, state, reason }, 'reconcile: retried the job of an unfinished run');
      } catch (err) {
        log.debug({ jobId: run.jobId, err: errorMessage(err) }, 'reconcile: job changed state meanwhile');
      }
      return;
    }
    if (source.markFailed) {
      await source.markFailed(db, run, reason || 'the job failed');
      report.markedFailed += 1;
      log.warn({ source: source.name, jobId: run.jobId, reason }, 'reconcile: marked a run failed whose job had failed');
    } else {
      log.warn({ source: source.name, jobId: run.jobId, reason }, 'reconcile: the job failed but SQL says the run is unfinished; retry it from the dashboard');
    }
  }
}

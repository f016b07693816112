/**
 * The worker runtime against real Redis/BullMQ, with stand-in handlers on real catalog names:
 * the context a handler gets (progress, log lines, attempt), the error edges (PermanentError →
 * no retry, bad payload → no retry, a plain error → retried), jobs_total, and graceful close
 * (the signal aborts, the job goes back to wait without using an attempt).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JobHandler } from '../../jobs/types.js';
import { PermanentError } from '../../src/lib/errors.js';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import { testConfig } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';
import { metricValues } from '../helpers/metrics.js';
import { redisKinds, redisOverrides } from '../helpers/redis-kinds.js';

// The runtime does not touch the database itself; one SQLite file stands in for the handler's db.
describe.each(redisKinds())('worker runtime on %s', (redisKind) => {
  let t: TestDb;
  let config: ReturnType<typeof testConfig>;
  let queues: JobQueues;
  let worker: InProcessWorker | undefined;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterEach(async () => {
    await worker?.close();
    worker = undefined;
    await queues.queues.migration.obliterate({ force: true });
    await queues.close();
  });
  afterAll(async () => {
    await t.destroy();
  });

  const fresh = () => {
    config = testConfig({ ...redisOverrides(redisKind), WORKER_CONCURRENCY: 2 });
    queues = new JobQueues(createRedisConnections(config));
  };
  const jobsTotal = async (outcome: string) => {
    const metric = (await metricValues('jobs_total')).find((v) => v.labels.queue === 'migration' && v.labels.outcome === outcome);
    return metric?.value ?? 0;
  };

  it('gives the handler its payload, attempt, progress and log lines, and counts the outcome', async () => {
    fresh();
    const seen: unknown[] = [];
    const handler: JobHandler<'migration-finalize'> = async (payload, ctx) => {
      seen.push({ payload, attempt: ctx.attempt, jobId: ctx.jobId });
      await ctx.progress({ percent: 40, step: 'half' });
      await ctx.logLine('step one done');
      return { ok: true };
    };
    const before = await jobsTotal('completed');
    worker = await startInProcessWorker(t.db, config, { handlers: { 'migration-finalize': handler }, queueNames: ['migration'] });
    await queues.enqueue('migration-finalize', { migrationId: 'm1' }, { jobId: 'finalize-m1' });
    const job = await until(async () => {
      const j = await queues.getJob('migration-finalize', 'finalize-m1');
      return (await j?.getState()) === 'completed' ? j : undefined;
    });
    expect(seen).toEqual([{ payload: { migrationId: 'm1' }, attempt: 1, jobId: 'finalize-m1' }]);
    // Completed: the ring reads 100 % whatever the last report said, the report's detail kept.
    expect(job!.progress).toEqual({ progress: 100, percent: 100, step: 'half' });
    expect(job!.returnvalue).toEqual({ ok: true });
    const { logs } = await queues.queues.migration.getJobLogs('finalize-m1');
    expect(logs).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT.* step one done$/)]);
    expect(await jobsTotal('completed')).toBe(before + 1);
  });

  it('fails a PermanentError and a payload that does not parse at once; retries a plain error', async () => {
    fresh();
    let plainCalls = 0;
    const permanent: JobHandler<'migration-finalize'> = async () => {
      throw new PermanentError('bad credentials');
    };
    const flaky: JobHandler<'migration-day'> = async (_p, ctx) => {
      plainCalls += 1;
      if (ctx.attempt < 2) throw new Error('network blip');
      return 'done';
    };
    const failedBefore = await jobsTotal('failed');
    worker = await startInProcessWorker(t.db, config, { handlers: { 'migration-finalize': permanent, 'migration-day': flaky }, queueNames: ['migration'] });
    await queues.enqueue('migration-finalize', { migrationId: 'm2' }, { jobId: 'finalize-m2' });
    // A payload the catalog refuses, written past enqueue() the way an old release might have.
    await queues.queues.migration.add('migration-finalize', { migrationId: 5, password: 'x' }, { jobId: 'bad-payload', attempts: 5 });
    // backoff of the catalog is 10 s: enqueue directly with a short one to keep the test fast.
    await queues.queues.migration.add('migration-day', { migrationId: 'm3', day: '2024-01-01' }, { jobId: 'day-m3', attempts: 3, backoff: { type: 'fixed', delay: 50 } });

    const stateOf = async (id: string) => (await queues.queues.migration.getJob(id))?.getState();
    await until(async () => (await stateOf('finalize-m2')) === 'failed' && (await stateOf('bad-payload')) === 'failed' && (await stateOf('day-m3')) === 'completed');
    const perm = await queues.queues.migration.getJob('finalize-m2');
    expect(perm!.attemptsMade).toBe(1);
    expect(perm!.failedReason).toBe('bad credentials');
    const bad = await queues.queues.migration.getJob('bad-payload');
    expect(bad!.attemptsMade).toBe(1);
    expect(bad!.failedReason).toMatch(/payload does not match the catalog/);
    expect(plainCalls).toBe(2);
    // It never reported progress; completed, it reads 100 %. A failed job keeps what it had.
    expect((await queues.queues.migration.getJob('day-m3'))!.progress).toBe(100);
    expect(perm!.progress).toBe(0);
    expect(await jobsTotal('failed')).toBe(failedBefore + 1);
  });

  it('runs MIGRATION_DAY_CONCURRENCY migration jobs at once, whatever WORKER_CONCURRENCY says', async () => {
    config = testConfig({ ...redisOverrides(redisKind), WORKER_CONCURRENCY: 1, MIGRATION_DAY_CONCURRENCY: 3 });
    queues = new JobQueues(createRedisConnections(config));
    let running = 0;
    let most = 0;
    const day: JobHandler<'migration-day'> = async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 400));
      running -= 1;
    };
    worker = await startInProcessWorker(t.db, config, { handlers: { 'migration-day': day }, queueNames: ['migration'] });
    for (const d of ['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-04']) {
      await queues.enqueue('migration-day', { migrationId: 'mc', day: d }, { jobId: `day-mc-${d}` });
    }
    await until(async () => (await queues.queues.migration.getJobCounts('completed')).completed === 4);
    expect(most).toBe(3);
  });

  it('rolling deploys: takes a payload with a field it does not know (a newer web enqueued it)', async () => {
    fresh();
    const seen: unknown[] = [];
    worker = await startInProcessWorker(t.db, config, {
      handlers: { 'migration-finalize': async (payload) => void seen.push(payload) },
      queueNames: ['migration'],
    });
    // Written past enqueue(), as a newer release's web would: an extra field this worker does not know.
    await queues.queues.migration.add('migration-finalize', { migrationId: 'm9', partitionHint: 3 }, { jobId: 'finalize-m9', attempts: 5 });
    await until(async () => (await (await queues.queues.migration.getJob('finalize-m9'))?.getState()) === 'completed');
    // The handler sees only the fields it knows.
    expect(seen).toEqual([{ migrationId: 'm9' }]);
    // And enqueue() itself accepts the extra field, so a newer worker's payload parses at an older web too.
    await expect(queues.enqueue('migration-finalize', { migrationId: 'm10', extra: true } as never, { jobId: 'finalize-m10' })).resolves.toBe('finalize-m10');
  });

  it('on close aborts the signal and hands the running job back to wait without using an attempt', async () => {
    fresh();
    let started = false;
    let abortedSeen = false;
    const slow: JobHandler<'migration-finalize'> = async (_p, ctx) => {
      started = true;
      if (!ctx.signal.aborted) await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      abortedSeen = ctx.signal.aborted;
      return 'checkpointed';
    };
    worker = await startInProcessWorker(t.db, config, { handlers: { 'migration-finalize': slow }, queueNames: ['migration'] });
    await queues.enqueue('migration-finalize', { migrationId: 'm4' }, { jobId: 'finalize-m4' });
    await until(async () => started);
    const t0 = Date.now();
    await worker.close();
    worker = undefined;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(abortedSeen).toBe(true);
    const job = await queues.queues.migration.getJob('finalize-m4');
    expect(await job!.getState()).toBe('waiting');
    expect(job!.attemptsMade).toBe(0);

    // A new worker takes it from there.
    let resumed = false;
    worker = await startInProcessWorker(t.db, config, {
      handlers: { 'migration-finalize': async () => void (resumed = true) },
      queueNames: ['migration'],
    });
    await until(async () => (await job!.getState()) === 'completed');
    expect(resumed).toBe(true);
  });

  describe('fetch watchdog', () => {
    const THRESHOLD = 1500;
    /** BullMQ Worker's default drainDelay: how long one blocking read lasts. */
    const DRAIN_DELAY_MS = 5000;
    const restarts = async () =>
      (await metricValues('worker_fetch_restarts_total')).find((v) => v.labels.queue === 'migration')?.value ?? 0;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it('replaces a worker that takes no job while one waits; an idle worker with nothing waiting is left alone', async () => {
      config = testConfig({ ...redisOverrides(redisKind), WORKER_CONCURRENCY: 2, WORKER_FETCH_WATCHDOG_MS: THRESHOLD });
      queues = new JobQueues(createRedisConnections(config));
      const before = await restarts();
      const ran: string[] = [];
      worker = await startInProcessWorker(t.db, config, {
        handlers: { 'migration-finalize': async (p) => void ran.push(p.migrationId) },
        queueNames: ['migration'],
      });
      const original = worker.runtime.workers[0]!;
      // The stand-in for a fetch loop wedged by a Redis outage: BullMQ's own pause stops this
      // worker fetching while it stays open, which is what the wedge looks like from outside.
      // pause(true) lets the blocking read in flight run out (drainDelay, 5 s) instead of cutting
      // it; cutting it (pause()) can hang on a Redis Cluster connection. So wait that out
      // before a job is enqueued, or the last read could still take it.
      await original.pause(true);

      await sleep(DRAIN_DELAY_MS + 1500);
      expect(worker.runtime.workers[0]).toBe(original);
      expect(await restarts()).toBe(before);

      const enqueued = Date.now();
      await queues.enqueue('migration-finalize', { migrationId: 'w1' }, { jobId: 'finalize-w1' });
      await until(async () => (await (await queues.getJob('migration-finalize', 'finalize-w1'))?.getState()) === 'completed', 15_000, 50);
      // Taken only once the watchdog replaced the worker, by the new one.
      expect(Date.now() - enqueued).toBeGreaterThanOrEqual(THRESHOLD);
      expect(worker.runtime.workers[0]).not.toBe(original);
      expect(await restarts()).toBe(before + 1);
      expect(ran).toEqual(['w1']);
    });

    it('leaves a busy worker alone (its one slot running, another job waiting), and any worker of a paused queue', async () => {
      config = testConfig({ ...redisOverrides(redisKind), WORKER_CONCURRENCY: 1, MIGRATION_DAY_CONCURRENCY: 1, WORKER_FETCH_WATCHDOG_MS: THRESHOLD });
      queues = new JobQueues(createRedisConnections(config));
      const before = await restarts();
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const ran: string[] = [];
      worker = await startInProcessWorker(t.db, config, {
        handlers: {
          'migration-finalize': async (p) => {
            ran.push(p.migrationId);
            if (p.migrationId === 'b1') await released;
          },
        },
        queueNames: ['migration'],
      });
      const original = worker.runtime.workers[0]!;
      await queues.enqueue('migration-finalize', { migrationId: 'b1' }, { jobId: 'finalize-b1' });
      await until(async () => ran.includes('b1'));
      await queues.enqueue('migration-finalize', { migrationId: 'b2' }, { jobId: 'finalize-b2' });
      await sleep(THRESHOLD * 2.5);
      expect(await (await queues.getJob('migration-finalize', 'finalize-b2'))!.getState()).toBe('waiting');
      expect(worker.runtime.workers[0]).toBe(original);
      release();
      await until(async () => (await (await queues.getJob('migration-finalize', 'finalize-b2'))?.getState()) === 'completed');

      // A paused queue: its jobs wait on purpose.
      await queues.queues.migration.pause();
      await queues.enqueue('migration-finalize', { migrationId: 'b3' }, { jobId: 'finalize-b3' });
      await sleep(THRESHOLD * 2.5);
      expect(worker.runtime.workers[0]).toBe(original);
      expect(await restarts()).toBe(before);
      await queues.queues.migration.resume();
      await until(async () => (await (await queues.getJob('migration-finalize', 'finalize-b3'))?.getState()) === 'completed');
      expect(ran).toEqual(['b1', 'b2', 'b3']);
    });
  });
});

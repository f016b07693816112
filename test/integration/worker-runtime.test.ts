/**
 * The worker runtime against real Redis/BullMQ, with stand-in handlers on real catalog names:
 * the context a handler gets (progress, log lines, attempt), the error edges (PermanentError →
 * no retry, bad payload → no retry, a plain error → retried), jobs_total, and graceful close
 * (the signal aborts, the job goes back to wait without using an attempt).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JobHandler } from '../../jobs/types.js';
import { PermanentError } from '../../src/lib/errors.js';
import { registry } from '../../src/lib/metrics.js';
import { JobQueues, redisConnection } from '../../src/queue/queues.js';
import { testConfig } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';

// The runtime does not touch the database itself; one SQLite file stands in for the handler's db.
describe('worker runtime', () => {
  let t: TestDb;
  const redis = redisConnection(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
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
    await redis.quit();
    await t.destroy();
  });

  const fresh = () => {
    config = testConfig({ WORKER_CONCURRENCY: 2 });
    queues = new JobQueues(redis, config.QUEUE_PREFIX);
  };
  const jobsTotal = async (outcome: string) => {
    const metric = (await registry.getSingleMetric('jobs_total')!.get()).values.find((v) => v.labels.queue === 'migration' && v.labels.outcome === outcome);
    return metric?.value ?? 0;
  };

  it('gives the handler its payload, attempt, progress and log lines, and counts the outcome', async () => {
    fresh();
    const seen: unknown[] = [];
    const handler: JobHandler<'migration-finalize'> = async (payload, ctx) => {
      seen.push({ payload, attempt: ctx.attempt, jobId: ctx.jobId });
      await ctx.progress({ percent: 40, step: 'half' });
      await ctx.logLine('step one done');
      await ctx.progress(100);
      return { ok: true };
    };
    const before = await jobsTotal('completed');
    worker = await startInProcessWorker(t.db, config, redis, { handlers: { 'migration-finalize': handler }, queueNames: ['migration'] });
    await queues.enqueue('migration-finalize', { migrationId: 'm1' }, { jobId: 'finalize-m1' });
    const job = await until(async () => {
      const j = await queues.getJob('migration-finalize', 'finalize-m1');
      return (await j?.getState()) === 'completed' ? j : undefined;
    });
    expect(seen).toEqual([{ payload: { migrationId: 'm1' }, attempt: 1, jobId: 'finalize-m1' }]);
    expect(job!.progress).toBe(100);
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
    worker = await startInProcessWorker(t.db, config, redis, { handlers: { 'migration-finalize': permanent, 'migration-day': flaky }, queueNames: ['migration'] });
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
    expect(await jobsTotal('failed')).toBe(failedBefore + 1);
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
    worker = await startInProcessWorker(t.db, config, redis, { handlers: { 'migration-finalize': slow }, queueNames: ['migration'] });
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
    worker = await startInProcessWorker(t.db, config, redis, {
      handlers: { 'migration-finalize': async () => void (resumed = true) },
      queueNames: ['migration'],
    });
    await until(async () => (await job!.getState()) === 'completed');
    expect(resumed).toBe(true);
  });
});

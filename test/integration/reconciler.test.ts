/**
 * The reconciler's decision table against real Redis/BullMQ, with a stand-in run source (what
 * SQL would say): lost job → enqueued once even with two reconcilers at once; completed job of
 * an unfinished run → retried; failed by stalling → retried; failed by a verdict → markFailed;
 * a job that finished after SQL was read → left alone; a half-deleted job → re-created.
 */
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/logger.js';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import { Reconciler, type ReconcileRun, type RunSource } from '../../src/runs/reconciler.js';
import { testConfig } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { redisKinds, redisOverrides } from '../helpers/redis-kinds.js';

describe.each(redisKinds())('reconciler on %s', (redisKind) => {
  let t: TestDb;
  let queues: JobQueues;
  let fetcher: Worker;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterEach(async () => {
    await fetcher?.close();
    await queues.queues['batch-import'].obliterate({ force: true });
    await queues.close();
  });
  afterAll(async () => {
    await t.destroy();
  });

  const setup = () => {
    const config = testConfig(redisOverrides(redisKind));
    queues = new JobQueues(createRedisConnections(config));
    // A worker without a processor: jobs are taken by hand, so each ends in exactly the state wanted.
    fetcher = new Worker('batch-import', null, { connection: queues.connection, prefix: queues.prefix, autorun: false });
  };
  const run = (id: string): ReconcileRun => ({ jobName: 'batch-import', jobId: `batch-import-${id}`, payload: { importId: id } });
  const source = (runs: ReconcileRun[], marked: string[] = [], before?: () => Promise<void>): RunSource => ({
    name: 'stand-in',
    findUnfinished: async () => {
      await before?.();
      return runs;
    },
    markFailed: async (_db, r, reason) => void marked.push(`${r.jobId}: ${reason}`),
  });
  const reconciler = (sources: RunSource[]) => new Reconciler({ db: t.db, queues, log: silentLogger, sources, intervalMs: 0 });

  /** Takes the next job and finishes it the given way. */
  async function finishNext(how: 'complete' | Error): Promise<Job> {
    const token = `tok-${Math.random()}`;
    const job = (await fetcher.getNextJob(token)) as Job;
    if (how === 'complete') await job.moveToCompleted('ok', token, false);
    else await job.moveToFailed(how, token, false);
    return job;
  }

  it('enqueues a run Redis lost, once, even with two reconcilers at once', async () => {
    setup();
    const runs = [run('a'), run('b')];
    const [r1, r2] = await Promise.all([reconciler([source(runs)]).runOnce(), reconciler([source(runs)]).runOnce()]);
    const reports = [r1, r2].filter(Boolean);
    expect(reports.length).toBeGreaterThanOrEqual(1);
    expect(await queues.queues['batch-import'].getJobCounts('waiting')).toEqual({ waiting: 2 });
    const job = await queues.getJob('batch-import', 'batch-import-a');
    expect(job!.data).toEqual({ importId: 'a' });
    // A second pass finds both in hand and does nothing.
    expect(await reconciler([source(runs)]).runOnce()).toMatchObject({ checked: 2, enqueued: 0, retried: 0 });
  });

  it('retries a completed job and a stalled-out job of unfinished runs; records a verdict via markFailed', async () => {
    setup();
    await queues.enqueue('batch-import', { importId: 'c' }, { jobId: 'batch-import-c' });
    await finishNext('complete');
    await queues.enqueue('batch-import', { importId: 's' }, { jobId: 'batch-import-s' });
    // What BullMQ's stalled check writes when a job lost its worker too often (final, no attempts left).
    await finishNext(new UnrecoverableError('job stalled more than allowable limit'));
    await queues.enqueue('batch-import', { importId: 'v' }, { jobId: 'batch-import-v' });
    await finishNext(new UnrecoverableError('the CSV header lacks column(s) time'));
    // A verdict whose text merely contains "lock" is still a verdict (classified by code, not words).
    await queues.enqueue('batch-import', { importId: 'b' }, { jobId: 'batch-import-b' });
    await finishNext(new UnrecoverableError('row 3: property "block_id" is not a lock-free number'));
    await new Promise((r) => setTimeout(r, 5));

    const marked: string[] = [];
    const report = await reconciler([source([run('c'), run('s'), run('v'), run('b')], marked)]).runOnce();
    expect(report).toMatchObject({ checked: 4, enqueued: 0, retried: 2, markedFailed: 2, errors: 0 });
    expect(await (await queues.getJob('batch-import', 'batch-import-c'))!.getState()).toBe('waiting');
    const stalled = await queues.getJob('batch-import', 'batch-import-s');
    expect(await stalled!.getState()).toBe('waiting');
    expect(stalled!.attemptsMade).toBe(0);
    expect(await (await queues.getJob('batch-import', 'batch-import-v'))!.getState()).toBe('failed');
    expect(marked).toEqual(['batch-import-v: the CSV header lacks column(s) time', 'batch-import-b: row 3: property "block_id" is not a lock-free number']);
  });

  it('leaves a job that finished after SQL was read for the next pass', async () => {
    setup();
    await queues.enqueue('batch-import', { importId: 'late' }, { jobId: 'batch-import-late' });
    // The job completes while the source is being read: SQL may already say "succeeded".
    const report = await reconciler([source([run('late')], [], async () => void (await finishNext('complete')))]).runOnce();
    expect(report).toMatchObject({ checked: 1, retried: 0, enqueued: 0 });
    expect(await (await queues.getJob('batch-import', 'batch-import-late'))!.getState()).toBe('completed');
  });

  it('re-creates a job whose hash survived but whose state keys were deleted', async () => {
    setup();
    await queues.enqueue('batch-import', { importId: 'h' }, { jobId: 'batch-import-h' });
    const prefix = queues.prefix;
    // The keys share the prefix's hash slot, so one DEL is legal on a cluster too.
    await queues.connection.del(`${prefix}:batch-import:wait`, `${prefix}:batch-import:marker`, `${prefix}:batch-import:meta`);
    expect(await queues.connection.exists(`${prefix}:batch-import:batch-import-h`)).toBe(1);
    expect(await reconciler([source([run('h')])]).runOnce()).toMatchObject({ enqueued: 1 });
    expect(await (await queues.getJob('batch-import', 'batch-import-h'))!.getState()).toBe('waiting');
  });

  it('keeps going when one source fails', async () => {
    setup();
    const broken: RunSource = { name: 'broken', findUnfinished: async () => Promise.reject(new Error('no such table')) };
    expect(await reconciler([broken, source([run('z')])]).runOnce()).toMatchObject({ errors: 1, enqueued: 1 });
  });
});

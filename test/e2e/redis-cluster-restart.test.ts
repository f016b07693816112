/**
 * A Redis Cluster master restarts in the middle of a batch import, a migration, and a partitioned sync (a
 * BullMQ flow: a parent run job, one child per partition, taken by two workers): the master holding the
 * deployment's hash slot (every queue key, the job's lock, the reconciler's lock) is shut down,
 * stays down for a while, and comes back — once with its data (appendonly, a clean restart) and
 * once empty (no persistence: for this deployment that is a Redis loss). Clients re-read the
 * slot map and reconnect, the worker's lock lapses or survives, the reconciler re-enqueues what
 * the master forgot, and the run ends with exactly N events, none counted twice.
 *
 * It starts a cluster of its own (.ci/redis-cluster.sh on free ports) so that taking a master
 * down never disturbs the suites sharing the CI cluster. Runs where .ci/run declares a cluster
 * (TEST_REDIS_CLUSTER_NODES), i.e. where redis-server is known to be installed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileSources } from '../../jobs/reconcile-sources.js';
import { findBatchImport } from '../../src/db/batch-imports.repo.js';
import { countEvents } from '../helpers/events.js';
import { metricValues } from '../helpers/metrics.js';
import { silentLogger } from '../../src/lib/logger.js';
import { Reconciler } from '../../src/runs/reconciler.js';
import { basicAuth, seedProject } from '../helpers/accounts.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { body, gzip, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';
import { startPrivateRedisCluster, type PrivateRedisCluster } from '../helpers/private-redis-cluster.js';
import { CLOSED_REDIS_URL, TEST_REDIS_CLUSTER_NODES } from '../helpers/redis-kinds.js';
import { BATCH_CHUNK_RECORDS } from '../../src/ingest/batch-import.chunk.js';
import { EV_EVENTS_IMPORT, fillEventsTable, sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { createSourceAndImport, manualSync, waitForRun, type Api } from '../helpers/warehouse.js';

// Fifteen batch-import chunks: the master restarts after the first, well before the last.
const N = 15 * BATCH_CHUNK_RECORDS;
const SYNC_ROWS = 48_000;
const SYNC_PARTITION_ROWS = 6_000;
const MIGRATION_EVENTS = 40_000;

// Conditional: needs redis-server with cluster mode; .ci/run starts the cluster and sets TEST_REDIS_CLUSTER_NODES, so CI always runs it.
describe.runIf(Boolean(TEST_REDIS_CLUSTER_NODES)).each([
  ['with its data (appendonly)', true],
  ['empty (no persistence)', false],
] as const)('a Redis Cluster master restarts mid-run, coming back %s', (_label, appendonly) => {
  let cluster: PrivateRedisCluster;
  let t: TestDb;
  let app: TestApp;
  let worker: InProcessWorker;
  let second: InProcessWorker;
  let reconciler: Reconciler;
  let src: WarehouseSourceHandle;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-restart-uploads-'));
  const migrationTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-restart-migrations-'));
  const dataset = new AmplitudeDataset({ seed: 7, startDay: '2024-04-01', days: 8, totalEvents: MIGRATION_EVENTS, users: 800 });
  let amplitude: AmplitudeStandin;

  beforeAll(async () => {
    await startPrivateRedisCluster({ appendonly, onCreated: (c) => (cluster = c) });
    t = await createTestDb('sqlite');
    amplitude = await startAmplitudeStandin({ dataset, apiKey: 'amp-key', apiSecret: 'amp-secret', gzipLevel: 1 });
    app = await startTestApp(t.db, {
      AMPLITUDE_US_URL: amplitude.url,
      MIGRATION_TMP_DIR: migrationTmp,
      MIGRATION_BATCH_EVENTS: 1000,
      // Two days at a time per worker, as before MIGRATION_DAY_CONCURRENCY existed: with its
      // default of 4, both workers load all 8 days at once and finish during the restart, and
      // the restart is then no longer mid-run.
      MIGRATION_DAY_CONCURRENCY: 2,
      REDIS_URL: CLOSED_REDIS_URL,
      REDIS_CLUSTER_NODES: cluster.nodes,
      UPLOAD_DIR: uploads,
      JOB_LOCK_MS: 2000,
      // A worker whose fetch loop a restart wedged is replaced well inside the waits below.
      WORKER_FETCH_WATCHDOG_MS: 10_000,
      SYNC_PARTITION_ROWS,
      WAREHOUSE_BATCH_SIZE: 1000,
      WAREHOUSE_READER_THREAD: 'off',
    });
    src = await sqliteSourceFixture.create();
    await fillEventsTable(src, SYNC_ROWS);
    worker = await startInProcessWorker(t.db, app.config);
    second = await startInProcessWorker(t.db, app.config);
    reconciler = new Reconciler({ db: t.db, queues: worker.queues, log: silentLogger, sources: reconcileSources, intervalMs: 500 });
    reconciler.start();
  }, 120_000);
  afterAll(async () => {
    // Not a failure: the watchdog doing its job. Printed so a CI log shows how often restarts wedge BullMQ.
    const replaced = (await metricValues('worker_fetch_restarts_total')).filter((v) => v.value > 0);
    if (replaced.length > 0) console.warn(`redis-cluster-restart: the fetch watchdog replaced workers: ${JSON.stringify(replaced.map((v) => [v.labels.queue, v.value]))}`);
    // Bounded: BullMQ's Worker.close() (and disconnect()) can wait forever on a blocking connection
    // that is still reconnecting after a node restart (taskforcesh/bullmq#4656); the run's result
    // is already asserted, and the private cluster must be stopped whatever happens here.
    const cleanup = (async () => {
      await reconciler?.stop();
      await second?.close();
      await worker?.close();
      await app?.close();
    })();
    const outcome = await Promise.race([cleanup.then(() => 'closed'), new Promise((r) => setTimeout(r, 20_000, 'timeout').unref())]);
    if (outcome === 'timeout') console.warn('redis-cluster-restart: worker close did not finish in 20 s (bullmq#4656); stopping the cluster anyway');
    await cluster?.stop();
    await amplitude?.close();
    fs.rmSync(migrationTmp, { recursive: true, force: true });
    await src?.cleanup();
    await t?.destroy().catch(() => {});
    fs.rmSync(uploads, { recursive: true, force: true });
  }, 120_000);

  /** /readyz names the failing dependency to operators (test/helpers/app.ts sets these credentials). */
  const operator = basicAuth('operator', 'operator-password');

  /** The port of the master serving the deployment's hash slot. */
  async function masterOfPrefix(): Promise<number> {
    const client = app.queues.connection;
    const slot = (await client.cluster('KEYSLOT', app.queues.prefix)) as number;
    const ranges = await client.cluster('SLOTS');
    const [, , [, port]] = ranges.find(([from, to]) => slot >= from && slot <= to)!;
    return port;
  }

  /**
   * Takes the deployment's master down for ~2.5 s (/readyz: 503 meanwhile) and brings it back.
   * `whileDown` runs once the master is down: the place to check the run is mid-way, since runs
   * in flight go on writing meanwhile and finish quickly once the cluster is back.
   */
  async function restartPrefixMaster(whileDown: () => Promise<void>): Promise<void> {
    const port = await masterOfPrefix();
    expect(cluster.ports).toContain(port);
    await cluster.down(port);
    const t0 = Date.now();
    // While a master is down the deployment is not ready: /readyz says which dependency.
    const ready = await until(async () => {
      const r = await fetch(`${app.url}/readyz`, { headers: { authorization: operator } });
      return r.status === 503 ? ((await r.json()) as { checks: Record<string, string> }) : undefined;
    }, 10_000, 100);
    expect(ready.checks).toMatchObject({ database: 'ok', redis: expect.not.stringMatching(/^ok$/) });
    await whileDown();
    await new Promise((r) => setTimeout(r, Math.max(0, 2500 - (Date.now() - t0))));
    await cluster.up();
  }

  /** What the queues and both workers look like, for a wait that timed out. */
  async function queueState(queue: 'warehouse-sync' | 'migration' | 'batch-import'): Promise<string> {
    const counts = await app.queues.queues[queue].getJobCounts().catch((err) => `counts failed: ${(err as Error).message}`);
    const workers = [worker, second].map((w) =>
      w.runtime.workers.map((x) => {
        const backend = x.getBackend() as unknown as { blockingConnection?: { _client?: { status?: string; nodes?: (r: string) => unknown[] } } };
        const client = backend.blockingConnection?._client;
        return `${x.name}: running=${x.isRunning()} blocking=${client?.status}/${client?.nodes?.('master').length ?? '?'}nodes`;
      }),
    );
    const restarts = await metricValues('worker_fetch_restarts_total');
    return JSON.stringify({ counts, workers, restarts });
  }

  /** `until`, and on timeout the queue's state in the error. */
  function untilOrDump<T>(queue: Parameters<typeof queueState>[0], probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs: number): Promise<T> {
    return until(probe, timeoutMs, everyMs).catch(async (err) => {
      throw new Error(`${(err as Error).message}; ${await queueState(queue)}`);
    });
  }

  /** Ready again once the master is back (clients re-read the slot map). */
  async function readyAgain(): Promise<void> {
    await until(async () => (await fetch(`${app.url}/readyz`)).status === 200, 20_000, 200).catch(async (err) => {
      throw new Error(`${(err as Error).message}: ${await (await fetch(`${app.url}/readyz`, { headers: { authorization: operator } })).text()}`);
    });
  }

  it('a batch import succeeds with exactly N events, none doubled', async () => {
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(gzip(ndjsonEvents(N))),
    });
    expect(res.status).toBe(202);
    const { results } = (await res.json()) as { results: { id: string; job_id: string } };
    await untilOrDump('batch-import', async () => (await findBatchImport(t.db, results.id))!.recordsDone >= BATCH_CHUNK_RECORDS, 60_000, 20);

    await restartPrefixMaster(async () => {
      expect((await findBatchImport(t.db, results.id))!.recordsDone).toBeLessThan(N);
    });

    const run = await until(async () => {
      const r = (await findBatchImport(t.db, results.id))!;
      return r.status === 'succeeded' || r.status === 'failed' ? r : undefined;
    }, 120_000, 100);
    expect(run).toMatchObject({ status: 'succeeded', recordsDone: N, imported: N, deduplicated: 0, rejected: 0 });
    expect(await countEvents(t.db, p.id)).toBe(N);
    await readyAgain();
    // Redis converges too: the job under its deterministic id ends completed (an attempt that lost
    // its lock may first back off, then finds the run finished and does nothing).
    await until(async () => (await (await app.queues.getJob('batch-import', results.job_id))?.getState()) === 'completed', 60_000, 200);
    expect(await countEvents(t.db, p.id)).toBe(N);
  }, 180_000);

  it('a migration (each day a job that either worker takes) succeeds with exactly N events, none doubled', async () => {
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/migrate/amplitude`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ AMPLITUDE_API_KEY: 'amp-key', AMPLITUDE_API_SECRET: 'amp-secret', MIXPANEL_TOKEN: p.token, START_DATE: '2024-04-01', END_DATE: '2024-04-08' }),
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { results: { migration_id: string } }).results.migration_id;
    const view = async () =>
      ((await (await fetch(`${app.url}/migrate/migrations/${id}`, { headers: { authorization: basicAuth(p.token) } })).json()) as { results: Record<string, any> }).results;
    // As soon as the first events land: two workers take the other days quickly, and a loaded
    // machine can take a second or two to stop the master.
    await untilOrDump('migration', async () => (await countEvents(t.db, p.id)) > 0 || undefined, 60_000, 20);

    await restartPrefixMaster(async () => {
      expect(await countEvents(t.db, p.id)).toBeLessThan(MIGRATION_EVENTS);
    });

    const done = await until(async () => {
      const v = await view();
      return v.status === 'succeeded' || v.status === 'failed' ? v : undefined;
    }, 150_000, 200);
    expect(done).toMatchObject({ status: 'succeeded', events_read: MIGRATION_EVENTS, events_loaded: MIGRATION_EVENTS, events_deduplicated: 0, events_rejected: 0, error: null });
    expect(done.partitions).toEqual({ total: 8, done: 8 });
    expect(await countEvents(t.db, p.id)).toBe(MIGRATION_EVENTS);
    await readyAgain();
  }, 200_000);

  it('a partitioned sync (a BullMQ flow over two workers) succeeds with exactly N rows, none doubled', async () => {
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), EV_EVENTS_IMPORT);
    const { run_id } = await manualSync(api, importId);
    await untilOrDump('warehouse-sync', async () => Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read) >= SYNC_PARTITION_ROWS, 60_000, 20);

    await restartPrefixMaster(async () => {
      expect(Number((await t.db('sync_runs').where({ id: run_id }).first()).rows_read)).toBeLessThan(SYNC_ROWS);
    });

    const done = await waitForRun(api, importId, run_id, 150_000);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: SYNC_ROWS, num_events_imported: SYNC_ROWS, num_deduplicated: 0, rows_skipped: 0, error: null });
    expect(done.partitions.total).toBeGreaterThanOrEqual(SYNC_ROWS / SYNC_PARTITION_ROWS);
    expect(done.partitions.done).toBe(done.partitions.total);
    expect(await countEvents(t.db, p.id)).toBe(SYNC_ROWS);
    await readyAgain();
  }, 200_000);
});

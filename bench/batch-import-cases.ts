/**
 * Cases of bench/batch-import.bench.ts, each run in its own child process (bench/isolated.ts)
 * so its peak RSS is its own. `importFile` is the whole path a user's file takes: POST it
 * (streamed from disk) to the real app, which stores and inspects it, then the real worker
 * runtime runs the job over real Redis until the run row says succeeded.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { configFrom } from '../config/index.js';
import { handlers } from '../jobs/index.js';
import type { JobHandler } from '../jobs/types.js';
import { WorkerRuntime } from '../jobs/worker-runtime.js';
import { createProject, createServiceAccount } from '../src/accounts/accounts.service.js';
import { Authenticator } from '../src/accounts/authenticator.js';
import { findBatchImport } from '../src/db/batch-imports.repo.js';
import { benchEventStore, countEvents } from './bench-store.js';
import type { EventStore } from '../src/store/event-store.js';
import { createDb, type Db } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createApp } from '../src/http/app.js';
import { listen } from '../src/http/server.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { generateEvents } from './ingest-data.js';

export interface ImportArgs {
  kind: 'sqlite' | 'postgres';
  /** SQLite file, or the Postgres URL (a fresh schema is made in it). */
  target: string;
  file: string;
  n: number;
  redisUrl: string;
  uploadDir: string;
}

export interface ImportResult {
  uploadSeconds: number;
  jobSeconds: number;
  stored: number;
  /** Largest JS heap in use, sampled every 200 ms (RSS also counts SQLite's and zlib's native memory). */
  maxHeapMb: number;
}

const CHUNK = 5000;

/**
 * Writes `n` events from the shared generator (ingest-data.ts, as the floors use) as NDJSON.gz,
 * streaming (the parent never holds the file).
 */
export async function writeEventsFile(file: string, n: number): Promise<number> {
  const gzip = zlib.createGzip({ level: 6 });
  const out = fs.createWriteStream(file);
  gzip.pipe(out);
  for (let i = 0, seed = 1; i < n; i += CHUNK, seed++) {
    const lines = generateEvents(Math.min(CHUNK, n - i), seed).map((e) => JSON.stringify(e));
    if (!gzip.write(`${lines.join('\n')}\n`)) await new Promise<void>((r) => gzip.once('drain', () => r()));
  }
  gzip.end();
  await new Promise<void>((r) => out.once('close', () => r()));
  return fs.statSync(file).size;
}

async function openDb(args: Pick<ImportArgs, 'kind' | 'target'>): Promise<{ db: Db; drop: () => Promise<void> }> {
  if (args.kind === 'sqlite') {
    const db = createDb({ DATABASE_URL: args.target });
    await migrateLatest(db);
    return { db, drop: () => db.destroy() };
  }
  const schema = `bench_${crypto.randomBytes(5).toString('hex')}`;
  const admin = createDb({ DATABASE_URL: args.target }, { poolMax: 1 });
  await admin.raw(`CREATE SCHEMA ${schema}`);
  const db = createDb({ DATABASE_URL: args.target }, { schema });
  await migrateLatest(db);
  return {
    db,
    drop: async () => {
      await db.destroy();
      await admin.raw(`DROP SCHEMA ${schema} CASCADE`);
      await admin.destroy();
    },
  };
}

function benchConfig(args: { redisUrl: string; uploadDir?: string }) {
  return configFrom({
    NODE_ENV: 'test',
    PORT: 0,
    HOST: '127.0.0.1',
    REDIS_URL: args.redisUrl,
    QUEUE_PREFIX: `bench-${crypto.randomBytes(4).toString('hex')}`,
    SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
    ADMIN_USERNAME: 'op',
    ADMIN_PASSWORD: 'op',
    LOG_LEVEL: 'silent',
    UPLOAD_DIR: args.uploadDir ?? '/tmp',
    WORKER_CONCURRENCY: 1,
  });
}

export async function importFile(args: ImportArgs): Promise<ImportResult> {
  const config = benchConfig(args);
  const { db, drop } = await openDb(args);
  const queues = new JobQueues(createRedisConnections(config));
  const secrets = createSecretBox(secretsKeyFrom(config.SECRETS_KEY));
  const app = createApp({ config, db, events: benchEventStore(db), log: silentLogger, auth: new Authenticator(db), secrets, queues, readiness: [] });
  const server = await listen(app, config);
  const runtime = new WorkerRuntime({ config, db, events: benchEventStore(db), log: silentLogger, secrets, queues, handlers, queueNames: ['batch-import'] });
  let maxHeap = 0;
  const sampler = setInterval(() => (maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed)), 200);
  try {
    const project = await createProject(db, { name: 'bench' });
    const sa = await createServiceAccount(db, { username: `bench-${project.id}-${Date.now()}`, projectId: project.id, role: 'owner' });
    const t0 = performance.now();
    const res = await fetch(`http://127.0.0.1:${server.port}/api/app/projects/${project.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${sa.username}:${sa.secret}`).toString('base64')}`, 'content-type': 'application/x-ndjson' },
      body: Readable.toWeb(fs.createReadStream(args.file)) as unknown as BodyInit,
      duplex: 'half',
    } as RequestInit);
    if (res.status !== 202) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
    const { results } = (await res.json()) as { results: { id: string } };
    const t1 = performance.now();
    runtime.start();
    for (;;) {
      const run = await findBatchImport(db, results.id);
      if (run?.status === 'succeeded') break;
      if (run?.status === 'failed') throw new Error(`import failed: ${run.error}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const t2 = performance.now();
    return { uploadSeconds: (t1 - t0) / 1000, jobSeconds: (t2 - t1) / 1000, stored: await countEvents(db, project.id), maxHeapMb: Math.round(maxHeap / 2 ** 20) };
  } finally {
    clearInterval(sampler);
    await runtime.close();
    await queues.queues['batch-import'].obliterate({ force: true });
    await server.close();
    await queues.close();
    await drop();
    fs.rmSync(path.join(args.uploadDir), { recursive: true, force: true });
  }
}

export interface LatencyArgs {
  redisUrl: string;
  jobs: number;
}

/**
 * Enqueue-to-start latency of a manual job on an idle worker: the time from the enqueue call
 * to the handler's first line, one job at a time (as a user's manual-sync click would be).
 * The handler is a stand-in on the warehouse-sync name, so the platform's overhead is measured.
 */
export async function enqueueLatency(args: LatencyArgs): Promise<{ ms: number[] }> {
  const config = benchConfig(args);
  const queues = new JobQueues(createRedisConnections(config));
  const started = new Map<string, number>();
  const stub: JobHandler<'warehouse-sync'> = async (payload) => {
    started.set(payload.runId, performance.now());
  };
  const runtime = new WorkerRuntime({
    config,
    db: undefined as unknown as Db,
    events: undefined as unknown as EventStore,
    log: silentLogger,
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    handlers: { 'warehouse-sync': stub },
    queueNames: ['warehouse-sync'],
  }).start();
  await runtime.ready();
  const ms: number[] = [];
  try {
    for (let i = 0; i < args.jobs; i++) {
      const runId = `run-${i}`;
      const t0 = performance.now();
      await queues.enqueue('warehouse-sync', { runId }, { jobId: `warehouse-sync-${runId}` });
      while (!started.has(runId)) await new Promise((r) => setImmediate(r));
      ms.push(started.get(runId)! - t0);
    }
    return { ms };
  } finally {
    await runtime.close();
    await queues.queues['warehouse-sync'].obliterate({ force: true });
    await queues.close();
  }
}

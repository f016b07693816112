/**
 * The ingestion bench's measurements, each run by bench/isolated.ts in its own process so its
 * peak RSS is its own: (a) floor — bare prepared inserts of already-built rows, (b) the ingest
 * write path called directly, (c) /import over HTTP from concurrent clients (a separate process).
 */
import crypto from 'node:crypto';
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configFrom } from '../config/index.js';
import { Authenticator } from '../src/accounts/authenticator.js';
import { createServiceAccount } from '../src/accounts/accounts.service.js';
import { benchEventStore, countEvents } from './bench-store.js';
import { createApp } from '../src/http/app.js';
import { createEventStore } from '../src/store/create-event-store.js';
import { ingestWorkerPool } from '../src/ingest/ingest-workers.js';
import { listen } from '../src/http/server.js';
import { ingestEvents } from '../src/ingest/events.ingest.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { openBenchStore, type BenchStore } from './bench-store.js';
import { batches, generateEvents } from './ingest-data.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BATCH = 2000;

export interface CaseArgs {
  kind: 'sqlite' | 'postgres';
  n: number;
  /** SQLite: a fresh file; Postgres: the server URL (a fresh schema is made and dropped). */
  target: string;
  clients?: number;
  redisUrl?: string;
  /** /import only: events go to this ClickHouse event store (EVENT_STORE_URL) instead of the bench database. */
  eventStoreUrl?: string;
  /** Extra config for the web app under test (e.g. INGEST_WORKERS). */
  appConfig?: Record<string, string | number>;
  /** /import: events carry $device_id / $user_id (ingest-data.ts). */
  identity?: boolean;
  /** /import: the project's ID merge system (original = identity rules off). */
  idMerge?: 'simplified' | 'original';
}

export interface CaseResult {
  events: number;
  seconds: number;
  stored: number;
  /** CPU time of this process (all its threads) per event, µs: steadier than wall time on a busy machine. */
  cpuUsPerEvent: number;
}

function cpuNow(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function openDb(args: CaseArgs, poolMax?: number): Promise<BenchStore> {
  return openBenchStore(args.kind, args.target, poolMax);
}

/** (b) The ingest write path called directly, 2000-event batches of parsed records. */
export async function writePath(args: CaseArgs): Promise<CaseResult> {
  const o = await openDb(args, 1);
  const chunks = batches(generateEvents(args.n), BATCH);
  const t0 = performance.now();
  const c0 = cpuNow();
  for (const c of chunks) await ingestEvents(benchEventStore(o.db), o.projectId, 'import', c, { strict: true });
  const seconds = (performance.now() - t0) / 1000;
  const cpuUsPerEvent = (cpuNow() - c0) / args.n;
  const stored = await countEvents(o.db, o.projectId);
  await o.close();
  return { events: args.n, seconds, stored, cpuUsPerEvent };
}

/** (c) `/import` over HTTP: this process serves, a forked client process sends gzip batches concurrently. */
export async function httpImport(args: CaseArgs): Promise<CaseResult> {
  const o = await openDb(args);
  const sa = await createServiceAccount(o.db, { username: 'bench', projectId: o.projectId, role: 'owner' });
  if (args.idMerge) await o.db('projects').where({ id: o.projectId }).update({ id_merge: args.idMerge });
  const key = crypto.createHash('sha256').update('bench').digest('hex');
  const config = configFrom({
    NODE_ENV: 'test',
    PORT: 0,
    HOST: '127.0.0.1',
    DATABASE_URL: o.url,
    SECRETS_KEY: key,
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: `bench-${crypto.randomBytes(4).toString('hex')}`,
    RATE_LIMIT_EVENTS_PER_SEC: 0,
    ...args.appConfig,
  });
  const queues = new JobQueues(createRedisConnections({ ...config, REDIS_URL: args.redisUrl ?? 'redis://127.0.0.1:6379' }));
  const events = args.eventStoreUrl ? createEventStore({ EVENT_STORE_URL: args.eventStoreUrl }, o.db) : benchEventStore(o.db);
  const app = createApp({ config, db: o.db, events, log: silentLogger, auth: new Authenticator(o.db), secrets: createSecretBox(secretsKeyFrom(key)), queues, readiness: [] });
  const server = await listen(app, config);
  // Workers start on first use; warm them so their start-up is not in the measurement.
  const workers = config.INGEST_WORKERS ?? (args.kind === 'sqlite' ? 1 : 0);
  if (workers > 0) await ingestWorkerPool(workers).warm();
  const c0 = cpuNow();
  const result = await new Promise<{ seconds: number; failures: number; firstError?: string }>((resolve, reject) => {
    const child = fork(path.join(here, 'ingest-client.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve(m as { seconds: number; failures: number }));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`bench client exited with ${code}`)));
    child.send({
      url: `http://127.0.0.1:${server.port}/import?project_id=${o.projectId}&strict=1`,
      authorization: `Basic ${Buffer.from(`${sa.username}:${sa.secret}`).toString('base64')}`,
      n: args.n,
      batch: BATCH,
      clients: args.clients ?? 4,
      identity: args.identity,
    });
  });
  // Includes the client's set-up time only as idle: the client process's CPU is its own.
  const cpuUsPerEvent = (cpuNow() - c0) / args.n;
  await server.close();
  await ingestWorkerPool(workers).close();
  await queues.close();
  const stored = await events.count(o.projectId);
  if (args.eventStoreUrl) await events.close();
  await o.close();
  if (result.failures > 0) throw new Error(`${result.failures} /import requests failed: ${result.firstError}`);
  return { events: args.n, seconds: result.seconds, stored, cpuUsPerEvent };
}

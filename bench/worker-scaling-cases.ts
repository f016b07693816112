/**
 * One partitioned sync run over K real `worker` processes (src/bin/worker.ts), with the queues on
 * plain Redis or on a Redis Cluster: a fresh store (a Postgres schema, or a SQLite file), the
 * import and run created the way the API does (triggerRun enqueues the run's job), then rows/s
 * from the trigger until the run row says SUCCEEDED. Used by worker-scaling.bench.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configFrom } from '../config/index.js';
import { createProject } from '../src/accounts/accounts.service.js';
import { countEvents } from './bench-store.js';
import { migrateLatest } from '../src/db/migrate.js';
import { listPartitions } from '../src/db/run-partitions.repo.js';
import { findRun } from '../src/db/sync-runs.repo.js';
import { findImport } from '../src/db/warehouse.repo.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { createImport } from '../src/warehouse/imports.service.js';
import { triggerRun } from '../src/warehouse/runs.service.js';
import { createSource } from '../src/warehouse/sources.service.js';
import { storeDb, TABLE } from './warehouse-sync-cases.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ScalingArgs {
  rows: number;
  workers: number;
  partitionRows: number;
  sourceFile: string;
  /** A SQLite file path, or a postgres URL (then `storeSchema` is a fresh schema). */
  store: string;
  storeSchema?: string;
  redis: { REDIS_URL: string; REDIS_CLUSTER_NODES: string };
}

export interface ScalingResult {
  seconds: number;
  stored: number;
  partitions: number;
  workersUsed: number;
}

function databaseUrl(args: ScalingArgs): string {
  if (!args.storeSchema) return args.store;
  const u = new URL(args.store);
  u.searchParams.set('options', `-c search_path=${args.storeSchema}`);
  return u.toString();
}

/** Starts one worker process; resolves once it logs that its BullMQ workers started. */
function startWorker(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('worker started')) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited ${code} before starting:\n${out.slice(-2000)}`)));
  });
}

export async function syncWithWorkers(args: ScalingArgs): Promise<ScalingResult> {
  const secretsKey = crypto.randomBytes(32).toString('hex');
  const prefix = `bench-${crypto.randomBytes(4).toString('hex')}`;
  const env = {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl(args),
    ...args.redis,
    QUEUE_PREFIX: prefix,
    SECRETS_KEY: secretsKey,
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
    SYNC_PARTITION_ROWS: String(args.partitionRows),
    // The bench's source is a scratch SQLite file: the operator's opt-in for that directory.
    WAREHOUSE_SQLITE_ALLOWED_DIRS: path.dirname(args.sourceFile),
    WAREHOUSE_ALLOWED_HOSTS: '127.0.0.1,localhost',
  };
  const config = configFrom({ ...env, LOG_LEVEL: 'silent' });
  const db = await storeDb(args);
  await migrateLatest(db);
  const queues = new JobQueues(createRedisConnections(config));
  const workers: ChildProcess[] = [];
  try {
    const deps = { db, config, secrets: createSecretBox(secretsKeyFrom(secretsKey)) };
    const project = await createProject(db, { name: 'bench' });
    const source = await createSource(deps, project.id, { type: 'sqlite', name: 'bench', config: { path: args.sourceFile } });
    const created = await createImport(deps, project.id, {
      warehouse_source_id: source.id,
      import_type: 'events',
      table_params: { table: TABLE },
      sync_mode: 'full_sync',
      schedule: 'api_only',
      event_column_name: 'event',
      time_column_name: 'ts',
      user_column_name: 'user_id',
    });
    workers.push(...(await Promise.all(Array.from({ length: args.workers }, () => startWorker(env)))));
    const imp = (await findImport(db, created.id as number))!;
    const started = process.hrtime.bigint();
    const { run } = await triggerRun({ db, queues, log: silentLogger }, imp, 'manual');
    let now = run;
    while (now.status !== 'SUCCEEDED' && now.status !== 'FAILED') {
      await new Promise((r) => setTimeout(r, 100));
      now = (await findRun(db, run.id))!;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (now.status !== 'SUCCEEDED') throw new Error(`run ended ${now.status}: ${String(now.error)}`);
    const parts = await listPartitions(db, 'sync', run.id);
    return {
      seconds,
      stored: await countEvents(db, project.id),
      partitions: parts.length,
      workersUsed: new Set(parts.map((p) => p.worker).filter(Boolean)).size,
    };
  } finally {
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.exitCode !== null) return resolve();
            w.once('exit', () => resolve());
            w.kill('SIGTERM');
          }),
      ),
    );
    await queues.redis.deleteKeys(`${queues.prefix}:*`).catch(() => {});
    await queues.close();
    await db.destroy();
  }
}

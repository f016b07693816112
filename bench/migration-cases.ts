/**
 * The migration bench's measurements, each in its own process (bench/isolated.ts) so its peak
 * RSS is its own:
 *
 * - floor: the same events (already transformed, validated and serialised, outside the timer)
 *   inserted by a bare prepared statement / unnest insert, one transaction per batch;
 * - migration: a whole Amplitude migration against the stand-in (download + unzip + gunzip +
 *   count pass, then download-or-reuse + parse + transform + validate + store + staged profiles,
 *   then profiles applied), its jobs run in-process through the registered handlers.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { configFrom } from '../config/index.js';
import { benchEventStore, countEvents } from './bench-store.js';
import { transformAmplitudeEvent } from '../src/domain/amplitude-transform.js';
import { validateEvents } from '../src/ingest/events.ingest.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { createMigration } from '../src/migration/migration-create.service.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { FLOOR_PG_INSERT, FLOOR_SQLITE_INSERT, openBenchStore, type BenchStore } from './bench-store.js';
import { AmplitudeDataset, type DatasetOptions } from '../test/amplitude-standin/dataset.js';
import { handlers } from '../jobs/index.js';
import { WorkerRuntime } from '../jobs/worker-runtime.js';

export interface MigrationCaseArgs {
  kind: 'sqlite' | 'postgres';
  /** SQLite: a fresh file path; Postgres: the server URL (a fresh schema is made and dropped). */
  target: string;
  dataset: DatasetOptions;
  standinUrl?: string;
  redisUrl?: string;
  tmpDir: string;
  batch: number;
}

export interface MigrationCaseResult {
  events: number;
  seconds: number;
  stored: number;
  profiles?: number;
  countSeconds?: number;
}

const SECRETS_KEY = crypto.createHash('sha256').update('bench').digest('hex');

function openDb(args: MigrationCaseArgs): Promise<BenchStore> {
  return openBenchStore(args.kind, args.target);
}

type Row = [string, string, number, string, string];

/** The rows a migration stores for these Amplitude records, built outside any timer. */
function rowsOf(records: Record<string, unknown>[]): Row[] {
  const events = records.map((r) => {
    const out = transformAmplitudeEvent(r, { migrationId: 'bench' });
    if (!out.ok) throw new Error(out.message);
    return out.record;
  });
  return validateEvents(events).events.map((e) => [e.event, e.distinctId, e.time, e.insertId, JSON.stringify(e.properties)]);
}

/** The store's floor: bare prepared inserts of built rows, `batch` per transaction. */
export async function floor(args: MigrationCaseArgs): Promise<MigrationCaseResult> {
  const ds = new AmplitudeDataset(args.dataset);
  const o = await openDb(args);
  const now = Date.now();
  let seconds = 0;
  let events = 0;
  if (args.kind === 'sqlite') {
    await o.db.destroy();
    const conn = new Database(args.target);
    conn.pragma('journal_mode = WAL');
    conn.pragma('synchronous = NORMAL');
    const stmt = conn.prepare(FLOOR_SQLITE_INSERT);
    const insert = conn.transaction((rows: Row[]) => {
      for (const r of rows) stmt.run(o.projectId, r[0], r[1], r[2], r[3], r[4], 'migration', now);
    });
    for (const day of ds.days()) {
      const records = ds.eventsForDay(day);
      for (let i = 0; i < records.length; i += args.batch) {
        const chunk = rowsOf(records.slice(i, i + args.batch));
        events += chunk.length;
        const t0 = performance.now();
        insert(chunk);
        seconds += (performance.now() - t0) / 1000;
      }
    }
    const stored = (conn.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
    conn.close();
    return { events, seconds, stored };
  }
  const client = new pg.Client({ connectionString: o.url });
  await client.connect();
  try {
    for (const day of ds.days()) {
      const records = ds.eventsForDay(day);
      for (let i = 0; i < records.length; i += args.batch) {
        const c = rowsOf(records.slice(i, i + args.batch));
        events += c.length;
        const values = [o.projectId, 'migration', now, c.map((r) => r[0]), c.map((r) => r[1]), c.map((r) => r[2]), c.map((r) => r[3]), c.map((r) => r[4])];
        const t0 = performance.now();
        await client.query('BEGIN');
        await client.query({ name: 'ins', text: FLOOR_PG_INSERT, values });
        await client.query('COMMIT');
        seconds += (performance.now() - t0) / 1000;
      }
    }
    const stored = Number((await client.query('SELECT count(*) AS n FROM events')).rows[0].n);
    return { events, seconds, stored };
  } finally {
    await client.end();
    await o.close();
  }
}

/** A whole migration of the dataset through the stand-in, timed end to end. */
export async function migration(args: MigrationCaseArgs): Promise<MigrationCaseResult> {
  const ds = new AmplitudeDataset(args.dataset);
  const o = await openDb(args);
  const prefix = `bench-${crypto.randomBytes(4).toString('hex')}`;
  const tmp = path.join(args.tmpDir, prefix);
  const config = configFrom({
    NODE_ENV: 'test',
    DATABASE_URL: o.url,
    REDIS_URL: args.redisUrl ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    SECRETS_KEY,
    LOG_LEVEL: 'silent',
    AMPLITUDE_US_URL: args.standinUrl!,
    MIGRATION_TMP_DIR: tmp,
    MIGRATION_BATCH_EVENTS: args.batch,
  });
  const queues = new JobQueues(createRedisConnections(config));
  let runtime: WorkerRuntime | undefined;
  try {
    const days = ds.days();
    const deps = { db: o.db, config, secrets: createSecretBox(secretsKeyFrom(SECRETS_KEY)), queues, log: silentLogger };
    const body = { SOURCE_TOOL_API_KEY: 'bench-key', SOURCE_TOOL_API_SECRET: 'bench-secret', SERVICE_TOKEN: o.token, START_DATE: days[0], END_DATE: days[days.length - 1] };
    // The real worker runtime, as the worker process runs it (WORKER_CONCURRENCY day jobs at once).
    runtime = new WorkerRuntime({ config, db: o.db, events: benchEventStore(o.db), log: silentLogger, secrets: deps.secrets, queues, handlers, queueNames: ['migration'] }).start();
    await runtime.ready();
    const t0 = performance.now();
    const { migration: m } = await createMigration(deps, 'amplitude', body);
    let countSeconds = 0;
    let row: Record<string, any>;
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      row = await o.db('migrations').where({ id: m.id }).first();
      if (countSeconds === 0 && row.phase !== 'count') countSeconds = (performance.now() - t0) / 1000;
      if (row.status === 'succeeded' || row.status === 'failed') break;
    }
    const seconds = (performance.now() - t0) / 1000;
    if (row.status !== 'succeeded') throw new Error(`migration ${row.status}: ${row.error}`);
    return { events: ds.totalEvents(), seconds, countSeconds, stored: await countEvents(o.db, o.projectId), profiles: Number(row.profiles_set) };
  } finally {
    await runtime?.close();
    await queues.queues.migration.obliterate({ force: true });
    await queues.close();
    await o.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The migration bench's measurements, each in its own process (bench/isolated.ts) so its peak
 * RSS is its own:
 *
 * - floor: the shared store floor (floors.ts) over the same events, transformed, validated and
 *   serialised outside the timer;
 * - migration: a whole Amplitude migration against the stand-in (download + unzip + gunzip +
 *   count pass, then download-or-reuse + parse + transform + validate + store + staged profiles,
 *   then profiles applied), its jobs run in-process through the registered handlers.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { configFrom } from '../config/index.js';
import { benchEventStore, countEvents } from './bench-store.js';
import { transformAmplitudeEvent } from '../src/domain/amplitude-transform.js';
import { validateEvents } from '../src/ingest/events.ingest.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { createMigration } from '../src/migration/migration-create.service.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { openBenchStore, type BenchStore } from './bench-store.js';
import { FLOOR_CHUNK, floorOfChunks } from './floors.js';
import { toEventRows, type EventRows } from '../src/store/event-rows.js';
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

/** The rows a migration stores for these Amplitude records, built outside any timer. */
function rowsOf(records: Record<string, unknown>[]): EventRows {
  const events = records.map((r) => {
    const out = transformAmplitudeEvent(r, { migrationId: 'bench' });
    if (!out.ok) throw new Error(out.message);
    return out.record;
  });
  return toEventRows(validateEvents(events).events);
}

/** The shared store floor (floors.ts) over the rows this migration stores, built untimed. */
export async function floor(args: MigrationCaseArgs): Promise<MigrationCaseResult> {
  const ds = new AmplitudeDataset(args.dataset);
  function* chunks(): Generator<EventRows> {
    for (const day of ds.days()) {
      const records = ds.eventsForDay(day);
      for (let i = 0; i < records.length; i += FLOOR_CHUNK) yield rowsOf(records.slice(i, i + FLOOR_CHUNK));
    }
  }
  const result = await floorOfChunks(args.kind, args.target, chunks, 'migration');
  return { events: result.events, seconds: result.seconds, stored: result.stored };
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
    const m = await createMigration(deps, 'amplitude', body);
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

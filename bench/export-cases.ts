/**
 * The export bench's steps, each run by bench/isolated.ts in its own process: `seed` loads the
 * generated events through the write path; `exportOverHttp` serves /api/2.0/export from a fresh
 * process and reads it back over HTTP, counting lines and discarding them — so its peak RSS is
 * the server's (and a streaming client's), which should not grow with the export's size.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { configFrom } from '../config/index.js';
import { Authenticator } from '../src/accounts/authenticator.js';
import { createProject } from '../src/accounts/accounts.service.js';
import { createDb, type Db } from '../src/db/knex.js';
import { benchEventStore } from './bench-store.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createApp } from '../src/http/app.js';
import { listen } from '../src/http/server.js';
import { ingestEvents } from '../src/ingest/events.ingest.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { batches, generateEvents } from './ingest-data.js';

export interface SeedArgs {
  kind: 'sqlite' | 'postgres';
  /** SQLite: a fresh file; Postgres: the server URL (a fresh schema is made). */
  target: string;
  n: number;
}

export interface Seeded {
  databaseUrl: string;
  schema?: string;
  projectId: number;
  apiSecret: string;
}

function open(url: string, schema?: string): Db {
  return createDb({ DATABASE_URL: url }, schema ? { schema } : {});
}

export async function seed(args: SeedArgs): Promise<Seeded> {
  let schema: string | undefined;
  if (args.kind === 'postgres') {
    schema = `bench_${crypto.randomBytes(5).toString('hex')}`;
    const admin = open(args.target);
    await admin.raw(`CREATE SCHEMA ${schema}`);
    await admin.destroy();
  }
  const db = open(args.target, schema);
  await migrateLatest(db);
  const p = await createProject(db, { name: 'export bench' });
  for (const chunk of batches(generateEvents(args.n), 2000)) await ingestEvents(benchEventStore(db), p.id, 'import', chunk);
  await db.destroy();
  return { databaseUrl: args.target, schema, projectId: p.id, apiSecret: p.api_secret };
}

export interface ExportArgs extends Seeded {
  redisUrl: string;
  /** Stop after this many events (Mixpanel's `limit`); absent: all. */
  limit?: number;
}

export interface ExportResult {
  events: number;
  bytes: number;
  seconds: number;
}

export async function exportOverHttp(args: ExportArgs): Promise<ExportResult> {
  const db = open(args.databaseUrl, args.schema);
  const key = crypto.createHash('sha256').update('bench').digest('hex');
  const config = configFrom({
    NODE_ENV: 'test',
    PORT: 0,
    HOST: '127.0.0.1',
    DATABASE_URL: args.databaseUrl,
    SECRETS_KEY: key,
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: `bench-${crypto.randomBytes(4).toString('hex')}`,
  });
  const queues = new JobQueues(createRedisConnections({ ...config, REDIS_URL: args.redisUrl }));
  const app = createApp({ config, db, events: benchEventStore(db), log: silentLogger, auth: new Authenticator(db), secrets: createSecretBox(secretsKeyFrom(key)), queues, readiness: [] });
  const server = await listen(app, config);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const q = new URLSearchParams({ from_date: day(Date.now() - 32 * 86_400_000), to_date: day(Date.now() + 86_400_000) });
  if (args.limit) q.set('limit', String(args.limit));
  const t0 = performance.now();
  const { events, bytes } = await new Promise<{ events: number; bytes: number }>((resolve, reject) => {
    const auth = `Basic ${Buffer.from(`${args.apiSecret}:`).toString('base64')}`;
    http
      .get(`http://127.0.0.1:${server.port}/api/2.0/export?${q}`, { headers: { authorization: auth } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`));
        let n = 0;
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n += 1;
        });
        res.on('end', () => resolve({ events: n, bytes: size }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
  const seconds = (performance.now() - t0) / 1000;
  await server.close();
  await queues.close();
  await db.destroy();
  return { events, bytes, seconds };
}

/** Drops the Postgres schema `seed` made. */
export async function cleanup(args: Seeded): Promise<void> {
  if (!args.schema) return;
  const admin = open(args.databaseUrl);
  await admin.raw(`DROP SCHEMA ${args.schema} CASCADE`);
  await admin.destroy();
}

/**
 * The experiments bench's measurement, run in its own process by bench/isolated.ts: a workspace
 * with `n` experiments (bulk-inserted through the repository), then `requests` sequential
 * GET …/experiments over real HTTP from a client process of its own (list-client.ts), each
 * timed until the whole body has arrived; and, as a floor, the repository query alone.
 */
import crypto from 'node:crypto';
import { configFrom } from '../config/index.js';
import { Authenticator } from '../src/accounts/authenticator.js';
import { createProject, createServiceAccount } from '../src/accounts/accounts.service.js';
import { insertExperiments, listLiveExperiments } from '../src/db/experiments.repo.js';
import { createDb, type Db } from '../src/db/knex.js';
import { benchEventStore } from './bench-store.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createApp } from '../src/http/app.js';
import { listen } from '../src/http/server.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { JobQueues } from '../src/queue/queues.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { syntheticExperiments } from '../test/helpers/experiments-fixture.js';
import { runClientProcess } from './client-process.js';
import type { ListClientOutcome } from './list-client.js';

export interface ListArgs {
  kind: 'sqlite' | 'postgres';
  n: number;
  requests: number;
  /** SQLite: a fresh file; Postgres: the server URL (a fresh schema is made and dropped). */
  target: string;
  redisUrl: string;
}

export interface ListResult {
  /** ms per request, in order. */
  http: number[];
  /** ms per repository query, in order. */
  query: number[];
  bytes: number;
}

async function open(args: ListArgs): Promise<{ db: Db; url: string; close: () => Promise<void> }> {
  if (args.kind === 'sqlite') {
    const db = createDb({ DATABASE_URL: args.target });
    return { db, url: args.target, close: () => db.destroy() };
  }
  const schema = `bench_${crypto.randomBytes(5).toString('hex')}`;
  const admin = createDb({ DATABASE_URL: args.target }, { poolMax: 1 });
  await admin.raw(`CREATE SCHEMA ${schema}`);
  const db = createDb({ DATABASE_URL: args.target }, { schema });
  const u = new URL(args.target);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return {
    db,
    url: u.toString(),
    close: async () => {
      await db.destroy();
      await admin.raw(`DROP SCHEMA ${schema} CASCADE`);
      await admin.destroy();
    },
  };
}

export async function listLatency(args: ListArgs): Promise<ListResult> {
  const o = await open(args);
  await migrateLatest(o.db);
  const project = await createProject(o.db, { name: 'bench' });
  const sa = await createServiceAccount(o.db, { username: 'bench-sa', projectId: project.id, role: 'owner' });
  const row = await o.db('service_accounts').where({ username: sa.username }).first();
  const actor = { id: Number(row.id), name: sa.username, email: null };
  await insertExperiments(o.db, syntheticExperiments(project.workspace_id, actor, args.n));

  const key = crypto.randomBytes(32).toString('hex');
  const config = configFrom({
    NODE_ENV: 'test',
    PORT: 0,
    HOST: '127.0.0.1',
    DATABASE_URL: o.url,
    SECRETS_KEY: key,
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: `bench-${crypto.randomBytes(4).toString('hex')}`,
  });
  const queues = new JobQueues(createRedisConnections({ ...config, REDIS_URL: args.redisUrl }));
  const app = createApp({ config, db: o.db, events: benchEventStore(o.db), log: silentLogger, auth: new Authenticator(o.db), secrets: createSecretBox(secretsKeyFrom(key)), queues, readiness: [] });
  const server = await listen(app, config);
  const url = `http://127.0.0.1:${server.port}/api/app/workspaces/${project.workspace_id}/experiments`;
  const authorization = `Basic ${Buffer.from(`${sa.username}:${sa.secret}`).toString('base64')}`;

  const client = await runClientProcess<ListClientOutcome>('list-client.ts', { url, authorization, requests: args.requests });
  if (client.count !== args.n) throw new Error(`listed ${client.count} of ${args.n}`);
  const query: number[] = [];
  for (let i = 0; i < args.requests; i++) {
    const started = performance.now();
    await listLiveExperiments(o.db, project.workspace_id);
    query.push(performance.now() - started);
  }
  await server.close();
  await queues.close();
  await o.close();
  return { http: client.http, query, bytes: client.bytes };
}

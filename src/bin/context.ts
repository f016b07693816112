/**
 * Wiring shared by every process: config, logger, database, Redis and the shutdown registry.
 * src/bin is the only place that builds concrete dependencies.
 */
import { loadConfig, type Config } from '../../config/index.js';
import { Authenticator } from '../accounts/authenticator.js';
import { createDb, type Db } from '../db/knex.js';
import { Lifecycle } from '../lib/lifecycle.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { createSecretBox, secretsKeyFrom, type SecretBox } from '../lib/secrets.js';
import { JobQueues } from '../queue/queues.js';
import { createRedisConnections, type RedisConnections } from '../queue/redis-connection.js';
import { createEventStore } from '../store/create-event-store.js';
import type { EventStore } from '../store/event-store.js';

export interface ProcessContext {
  config: Config;
  log: Logger;
  db: Db;
  /** Every read and write of events goes through it (src/store; EVENT_STORE_URL picks the kind). */
  events: EventStore;
  /** The one Redis factory (plain Redis or a cluster): queues.redis, kept here for readiness checks. */
  redis: RedisConnections;
  queues: JobQueues;
  secrets: SecretBox;
  auth: Authenticator;
  lifecycle: Lifecycle;
}

export async function createProcessContext(config: Config = loadConfig()): Promise<ProcessContext> {
  const log = createLogger(config.LOG_LEVEL);
  const lifecycle = new Lifecycle();
  const redis = createRedisConnections(config);
  await redis.assertReachable();
  const db = createDb(config, { log: log.child({ component: 'database' }) });
  lifecycle.register('database', () => db.destroy());
  const events = createEventStore(config, db);
  lifecycle.register('event store', () => events.close());
  const queues = new JobQueues(redis, log.child({ component: 'queues' }));
  lifecycle.register('queues and redis', () => queues.close());
  const secrets = createSecretBox(secretsKeyFrom(config.SECRETS_KEY));
  if (config.NODE_ENV === 'development') announceDevelopmentMode(config, log);
  return { config, log, db, events, redis, queues, secrets, auth: new Authenticator(db), lifecycle };
}

/**
 * Development mode is asked for (NODE_ENV=development; `npm start` sets it unless NODE_ENV is
 * given) and says so loudly, on stderr and in the log, because it weakens what production keeps.
 */
function announceDevelopmentMode(config: Config, log: Logger): void {
  const weakened = [
    config.SECRETS_KEY ? undefined : 'source credentials are sealed with the PUBLISHED development SECRETS_KEY',
    config.ADMIN_USERNAME && config.ADMIN_PASSWORD ? undefined : 'the operator dashboard and /metrics are OPEN without ADMIN_USERNAME/ADMIN_PASSWORD',
  ].filter((w): w is string => w !== undefined);
  const lines = [
    '*** DEVELOPMENT MODE (NODE_ENV=development): for a local demo only ***',
    ...weakened.map((w) => `*** ${w} ***`),
    '*** production: NODE_ENV=production (the default) with SECRETS_KEY (openssl rand -hex 32) and ADMIN_USERNAME/ADMIN_PASSWORD ***',
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
  log.warn({ weakened }, 'DEVELOPMENT MODE: not for production');
}

/** Runs a process entry point; a start-up failure prints one line and exits 1. */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

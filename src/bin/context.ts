/**
 * Wiring shared by every process: config, logger, database, Redis and the shutdown registry.
 * src/bin is the only place that builds concrete dependencies.
 */
import { Redis } from 'ioredis';
import { loadConfig, type Config } from '../../config/index.js';
import { Authenticator } from '../accounts/authenticator.js';
import { createDb, type Db } from '../db/knex.js';
import { Lifecycle } from '../lib/lifecycle.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { createSecretBox, secretsKeyFrom, type SecretBox } from '../lib/secrets.js';
import { JobQueues, redisConnection } from '../queue/queues.js';

export interface ProcessContext {
  config: Config;
  log: Logger;
  db: Db;
  redis: Redis;
  queues: JobQueues;
  secrets: SecretBox;
  auth: Authenticator;
  lifecycle: Lifecycle;
}

/** Fails in one clear line when Redis does not answer, instead of a stack of retry noise. */
export async function assertRedisReachable(url: string, timeoutMs = 3000): Promise<void> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
  } catch {
    throw new Error(
      `Redis is not reachable at REDIS_URL=${url.replace(/\/\/[^@]*@/, '//***@')}: start it (redis-server --daemonize yes) or set REDIS_URL.`,
    );
  } finally {
    probe.disconnect();
  }
}

export async function createProcessContext(config: Config = loadConfig()): Promise<ProcessContext> {
  const log = createLogger(config.LOG_LEVEL);
  const lifecycle = new Lifecycle();
  await assertRedisReachable(config.REDIS_URL);
  const db = createDb(config);
  lifecycle.register('database', () => db.destroy());
  const redis = redisConnection(config.REDIS_URL);
  lifecycle.register('redis', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  const queues = new JobQueues(redis, config.QUEUE_PREFIX);
  lifecycle.register('queues', () => queues.close());
  const secrets = createSecretBox(secretsKeyFrom(config.SECRETS_KEY));
  if (!config.SECRETS_KEY) log.warn('SECRETS_KEY is not set: using the development key (never do this in production)');
  return { config, log, db, redis, queues, secrets, auth: new Authenticator(db), lifecycle };
}

/** Runs a process entry point; a start-up failure prints one line and exits 1. */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

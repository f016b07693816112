/**
 * Starts the real Express app on an ephemeral port over a test database and the real Redis,
 * with a unique queue prefix so tests never see each other's jobs.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { configFrom, type Config } from '../../config/index.js';
import { Authenticator } from '../../src/accounts/authenticator.js';
import { createApp } from '../../src/http/app.js';
import type { ReadinessCheck } from '../../src/http/deps.js';
import { listen } from '../../src/http/server.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections } from '../../src/queue/redis-connection.js';
import type { Db } from '../../src/db/knex.js';
import { TEST_REDIS_URL } from './redis-kinds.js';

export { TEST_REDIS_URL };
import { eventStoreOf } from './events.js';

export const TEST_SECRETS_KEY = crypto.createHash('sha256').update('test-secrets-key').digest('hex');

/**
 * The operator's opt-in that lets tests reach their warehouse sources: on loopback (Postgres,
 * MariaDB, the stand-ins) and in temp directories (SQLite files). The defaults refuse both
 * (test/integration/warehouse-reach.test.ts); spawned processes get the same through their env.
 */
export const TEST_WAREHOUSE_REACH = {
  WAREHOUSE_ALLOWED_HOSTS: '127.0.0.1,localhost,::1',
  WAREHOUSE_SQLITE_ALLOWED_DIRS: os.tmpdir(),
} as const;

export interface TestApp {
  url: string;
  config: Config;
  queues: JobQueues;
  close: () => Promise<void>;
}

export function testConfig(overrides: Parameters<typeof configFrom>[0] = {}): Config {
  return configFrom({
    NODE_ENV: 'test',
    PORT: 0,
    HOST: '127.0.0.1',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `test-${crypto.randomBytes(4).toString('hex')}`,
    SECRETS_KEY: TEST_SECRETS_KEY,
    ADMIN_USERNAME: 'operator',
    ADMIN_PASSWORD: 'operator-password',
    LOG_LEVEL: 'silent',
    ...TEST_WAREHOUSE_REACH,
    // Tests sync one import back to back; the per-hour limit has its own test (test/security/manual-sync-limit.test.ts).
    MANUAL_SYNC_PER_HOUR: 0,
    ...overrides,
  });
}

/** `readiness`: more dependencies for /readyz beside the database and Redis. */
export async function startTestApp(db: Db, overrides: Parameters<typeof configFrom>[0] = {}, more: { readiness?: ReadinessCheck[] } = {}): Promise<TestApp> {
  const config = testConfig(overrides);
  const redis = createRedisConnections(config);
  const queues = new JobQueues(redis);
  const app = createApp({
    config,
    db,
    events: eventStoreOf(db),
    log: silentLogger,
    auth: new Authenticator(db),
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    readiness: [
      { name: 'database', check: async () => void (await db.raw('select 1')) },
      { name: 'redis', check: () => redis.ping() },
      ...(more.readiness ?? []),
    ],
  });
  const server = await listen(app, config);
  return {
    url: `${server.protocol}://127.0.0.1:${server.port}`,
    config,
    queues,
    close: async () => {
      await server.close();
      await queues.close();
    },
  };
}

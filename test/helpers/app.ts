/**
 * Starts the real Express app on an ephemeral port over a test database and the real Redis,
 * with a unique queue prefix so tests never see each other's jobs.
 */
import crypto from 'node:crypto';
import { configFrom, type Config } from '../../config/index.js';
import { Authenticator } from '../../src/accounts/authenticator.js';
import { createApp } from '../../src/http/app.js';
import { listen } from '../../src/http/server.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { JobQueues, redisConnection } from '../../src/queue/queues.js';
import type { Db } from '../../src/db/knex.js';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_SECRETS_KEY = crypto.createHash('sha256').update('test-secrets-key').digest('hex');

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
    ...overrides,
  });
}

export async function startTestApp(db: Db, overrides: Parameters<typeof configFrom>[0] = {}): Promise<TestApp> {
  const config = testConfig(overrides);
  const redis = redisConnection(config.REDIS_URL);
  const queues = new JobQueues(redis, config.QUEUE_PREFIX);
  const app = createApp({
    config,
    db,
    log: silentLogger,
    auth: new Authenticator(db),
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    readiness: [
      { name: 'database', check: async () => void (await db.raw('select 1')) },
      { name: 'redis', check: async () => void (await redis.ping()) },
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
      await redis.quit();
    },
  };
}

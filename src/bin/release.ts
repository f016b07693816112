import { pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../../config/index.js';
import { createDb } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { errorMessage } from '../lib/errors.js';
import { createLogger, type Logger } from '../lib/logger.js';
import { redactUrl } from '../lib/redact-url.js';
import { migrateEventStore } from '../store/clickhouse/clickhouse-migrate.js';
import { runMain } from './context.js';

/**
 * The release step: database migrations, once per deploy. `log` takes knex's own warnings (a
 * refused connection), which otherwise go to the console as raw stacks.
 */
export async function release(config: Pick<Config, 'DATABASE_URL'>, log?: Logger): Promise<string[]> {
  const db = createDb(config, { log });
  try {
    return await migrateLatest(db);
  } catch (err) {
    throw new Error(`migrations failed on DATABASE_URL=${redactUrl(config.DATABASE_URL)}: ${errorMessage(err)}`, { cause: err });
  } finally {
    await db.destroy();
  }
}

/** The event store's schema when events live outside DATABASE_URL (ClickHouse); else nothing. */
export async function releaseEventStore(config: Pick<Config, 'EVENT_STORE_URL' | 'EVENT_STORE_CLUSTER' | 'EVENT_STORE_SHARD_URLS' | 'EVENT_STORE_HOT_PROPERTIES'>): Promise<string[]> {
  if (!config.EVENT_STORE_URL) return [];
  return migrateEventStore({ ...config, EVENT_STORE_URL: config.EVENT_STORE_URL });
}

/** The whole one-shot release, as the Procfile's `release` and `START_PROCESSES=release` run it: both steps, one log line. */
export async function runRelease(config: Config): Promise<void> {
  const log = createLogger(config.LOG_LEVEL);
  const applied = await release(config, log.child({ component: 'database' }));
  const eventStore = await releaseEventStore(config);
  log.info({ applied, eventStore }, 'migrations applied');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(() => runRelease(loadConfig()));
}

import { pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../../config/index.js';
import { createDb } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { createLogger } from '../lib/logger.js';
import { migrateEventStore } from '../store/clickhouse/clickhouse-migrate.js';
import { runMain } from './context.js';

/** The release step: database migrations, once per deploy. */
export async function release(databaseUrl: string): Promise<string[]> {
  const db = createDb({ DATABASE_URL: databaseUrl });
  try {
    return await migrateLatest(db);
  } finally {
    await db.destroy();
  }
}

/** The event store's schema when events live outside DATABASE_URL (ClickHouse); else nothing. */
export async function releaseEventStore(config: Pick<Config, 'EVENT_STORE_URL' | 'EVENT_STORE_CLUSTER' | 'EVENT_STORE_SHARD_URLS' | 'EVENT_STORE_HOT_PROPERTIES'>): Promise<string[]> {
  if (!config.EVENT_STORE_URL) return [];
  return migrateEventStore({ ...config, EVENT_STORE_URL: config.EVENT_STORE_URL });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const config = loadConfig();
    const applied = await release(config.DATABASE_URL);
    const eventStore = await releaseEventStore(config);
    createLogger(config.LOG_LEVEL).info({ applied, eventStore }, 'migrations applied');
  });
}

import { pathToFileURL } from 'node:url';
import { loadConfig } from '../../config/index.js';
import { createDb } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { createLogger } from '../lib/logger.js';
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

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain(async () => {
    const config = loadConfig();
    const applied = await release(config.DATABASE_URL);
    createLogger(config.LOG_LEVEL).info({ applied }, 'migrations applied');
  });
}

/**
 * The service on a ClickHouse event store of a test's own (a lone server, or a cluster of them):
 * accounts in a fresh SQLite database, the store migrated and attached, the app with its rate
 * limit off, and an admin's project — what the outage tests stop servers under.
 */
import { ClickHouseEventStore, type ClickHouseStoreConfig } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { seedProject, type SeededProject } from './accounts.js';
import { startTestApp, type TestApp } from './app.js';
import { createTestDb } from './db.js';
import { attachEventStore } from './events.js';

export interface ClickHouseApp {
  app: TestApp;
  store: ClickHouseEventStore;
  p: SeededProject;
  close(): Promise<void>;
}

export async function startClickHouseApp(storeConfig: ClickHouseStoreConfig): Promise<ClickHouseApp> {
  const t = await createTestDb('sqlite');
  const store = new ClickHouseEventStore(storeConfig);
  await store.migrate();
  attachEventStore(t.db, store);
  const app = await startTestApp(t.db, { ...storeConfig, RATE_LIMIT_EVENTS_PER_SEC: 0 });
  const p = await seedProject(t.db, { role: 'admin' });
  return {
    app,
    store,
    p,
    async close() {
      await app.close();
      await store.close();
      await t.destroy();
    },
  };
}

/**
 * `cli events move --project ID --to URL [--from URL] [--to-cluster NAME --to-shard-urls URLS]`:
 * copies a project's events between event stores and verifies the counts (docs/scaling.md).
 * A store URL is `clickhouse://…` (ClickHouse) or a DATABASE_URL (SQLite path, `postgres://…`).
 * The source defaults to the configured event store. The destination's schema is created first.
 */
import type { Config } from '../../config/index.js';
import { findProjectById } from '../db/accounts.repo.js';
import { silentLogger } from '../lib/logger.js';
import { createDb, type Db } from '../db/knex.js';
import { ValidationError } from '../lib/errors.js';
import { migrateLatest } from '../db/migrate.js';
import { ClickHouseEventStore } from '../store/clickhouse/clickhouse-event.store.js';
import { isClickHouseUrl } from '../store/clickhouse/clickhouse-url.js';
import { createEventStore } from '../store/create-event-store.js';
import type { EventStore } from '../store/event-store.js';
import { moveProjectEvents, type MoveResult } from '../store/event-store-move.js';

export interface MoveOptions {
  projectId: number;
  to: string;
  from?: string;
  toCluster?: string;
  toShardUrls?: string;
}

interface Opened {
  store: EventStore;
  close: () => Promise<void>;
}

/** An event store at `url`, schema applied (ClickHouse: release's migrations; SQL: src/db migrations). */
async function openStoreAt(url: string, cluster?: string, shardUrls?: string): Promise<Opened> {
  if (isClickHouseUrl(url)) {
    const store = new ClickHouseEventStore({ EVENT_STORE_URL: url, EVENT_STORE_CLUSTER: cluster, EVENT_STORE_SHARD_URLS: shardUrls });
    await store.migrate();
    return { store, close: () => store.close() };
  }
  // Silent: knex's own warnings are multi-line stacks; the CLI prints the one-line error its failure ends in.
  const db = createDb({ DATABASE_URL: url }, { log: silentLogger });
  await migrateLatest(db);
  const store = createEventStore({ EVENT_STORE_URL: undefined }, db);
  return {
    store,
    close: async () => {
      await store.close();
      await db.destroy();
    },
  };
}

export async function runEventsMove(options: MoveOptions, config: Config, db: Db): Promise<MoveResult> {
  const project = await findProjectById(db, options.projectId);
  if (!project) throw new ValidationError(404, `project ${options.projectId} not found in DATABASE_URL`);
  let source: Opened;
  if (options.from) source = await openStoreAt(options.from);
  else {
    // The configured store; closing it never closes the shared DATABASE_URL handle.
    const store = createEventStore(config, db);
    source = { store, close: () => store.close() };
  }
  try {
    const destination = await openStoreAt(options.to, options.toCluster, options.toShardUrls);
    try {
      return await moveProjectEvents(source.store, destination.store, options.projectId, project.idMerge);
    } finally {
      await destination.close();
    }
  } finally {
    await source.close();
  }
}

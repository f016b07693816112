/**
 * Picks the event store by configuration (CONTRACT §7): without EVENT_STORE_URL events live in
 * DATABASE_URL (SQLite or PostgreSQL, the same handle as accounts and runs); `clickhouse://…`
 * puts them in ClickHouse (a cluster with EVENT_STORE_CLUSTER). Called once per process in
 * src/bin/context.ts; a new store kind adds one branch here.
 */
import type { Config } from '../../config/index.js';
import type { Db } from '../db/knex.js';
import { ClickHouseEventStore } from './clickhouse/clickhouse-event.store.js';
import { isClickHouseUrl } from './clickhouse/clickhouse-url.js';
import type { EventStore } from './event-store.js';
import { SqlEventStore } from './sql/sql-event-store.js';

export type EventStoreConfig = Pick<Config, 'EVENT_STORE_URL'> & Partial<Pick<Config, 'EVENT_STORE_CLUSTER' | 'EVENT_STORE_SHARD_URLS' | 'EVENT_STORE_HOT_PROPERTIES'>>;

export function createEventStore(config: EventStoreConfig, db: Db): EventStore {
  const url = config.EVENT_STORE_URL;
  if (url === undefined || url === '') return new SqlEventStore(db);
  if (isClickHouseUrl(url)) {
    return new ClickHouseEventStore({
      EVENT_STORE_URL: url,
      EVENT_STORE_CLUSTER: config.EVENT_STORE_CLUSTER,
      EVENT_STORE_SHARD_URLS: config.EVENT_STORE_SHARD_URLS,
      EVENT_STORE_HOT_PROPERTIES: config.EVENT_STORE_HOT_PROPERTIES,
    });
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  throw new Error(`EVENT_STORE_URL: unsupported event store '${scheme ?? url.slice(0, 20)}' (leave it unset to keep events in DATABASE_URL)`);
}

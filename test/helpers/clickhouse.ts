/**
 * ClickHouse event stores for tests: a fresh database per test file on the single server
 * (TEST_CLICKHOUSE_URL) or on every node of the two-shard cluster (TEST_CLICKHOUSE_CLUSTER_URL,
 * TEST_CLICKHOUSE_CLUSTER, TEST_CLICKHOUSE_SHARD_URLS), migrated the way `release` does it.
 * .ci/run starts both and sets the variables; without them the ClickHouse kinds are not run.
 */
import crypto from 'node:crypto';
import { dropEventStore, migrateEventStore, type EventStoreSchemaConfig } from '../../src/store/clickhouse/clickhouse-migrate.js';
import { withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';

export type ClickHouseKind = 'clickhouse' | 'clickhouse-cluster';

export function clickhouseKinds(): ClickHouseKind[] {
  const kinds: ClickHouseKind[] = [];
  if (process.env.TEST_CLICKHOUSE_URL) kinds.push('clickhouse');
  if (process.env.TEST_CLICKHOUSE_CLUSTER_URL && process.env.TEST_CLICKHOUSE_CLUSTER && process.env.TEST_CLICKHOUSE_SHARD_URLS) {
    kinds.push('clickhouse-cluster');
  }
  return kinds;
}

export interface TestEventStoreConfig {
  EVENT_STORE_URL: string;
  EVENT_STORE_CLUSTER?: string;
  EVENT_STORE_SHARD_URLS?: string;
  EVENT_STORE_HOT_PROPERTIES?: string;
}

export interface TestClickHouse {
  kind: ClickHouseKind;
  database: string;
  /** The config slice a process (or createEventStore) needs to reach this database. */
  config: TestEventStoreConfig;
  destroy: () => Promise<void>;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/** Config for a database named `database` on the given kind of deployment. */
export function clickhouseConfig(kind: ClickHouseKind, database: string): TestEventStoreConfig {
  if (kind === 'clickhouse') return { EVENT_STORE_URL: withDatabase(required('TEST_CLICKHOUSE_URL'), database) };
  const shards = required('TEST_CLICKHOUSE_SHARD_URLS')
    .split(',')
    .map((u) => withDatabase(u.trim(), database));
  return {
    EVENT_STORE_URL: withDatabase(required('TEST_CLICKHOUSE_CLUSTER_URL'), database),
    EVENT_STORE_CLUSTER: required('TEST_CLICKHOUSE_CLUSTER'),
    EVENT_STORE_SHARD_URLS: shards.join(','),
  };
}

/** `hotProperties`: EVENT_STORE_HOT_PROPERTIES for the migration (unset: the defaults). */
export async function createTestClickHouse(kind: ClickHouseKind, hotProperties?: string): Promise<TestClickHouse> {
  // The name says test: dropEventStore only ever runs on such databases.
  const database = `test_${crypto.randomBytes(6).toString('hex')}`;
  const config = { ...clickhouseConfig(kind, database), ...(hotProperties === undefined ? {} : { EVENT_STORE_HOT_PROPERTIES: hotProperties }) };
  await migrateEventStore(config);
  return {
    kind,
    database,
    config,
    destroy: async () => {
      if (!/^test_/.test(database)) throw new Error(`refusing to drop ${database}`);
      await dropEventStore(config as EventStoreSchemaConfig);
    },
  };
}

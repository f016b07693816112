/**
 * The ClickHouse schema, as ordered migrations the `release` process applies (never web/worker
 * start-up). Written in the subset ClickHouse 18.16 and current releases share: no DateTime64
 * (times are Int64 epoch ms), no LowCardinality, no JSON type (properties are JSON text plus
 * typed top-level arrays that reports read), `ORDER BY` without `PARTITION BY`.
 *
 * Two layouts, one set of names the store uses:
 * - single server: `events` and `identity_links` are MergeTree tables;
 * - cluster (EVENT_STORE_CLUSTER): `<table>_local` on every shard node plus `<table>`, a
 *   Distributed table on every node. Events shard on cityHash64 of the whole dedupe key, so all
 *   copies and versions of one event live on one shard and FINAL (per shard) is exact.
 */
import { ident } from './clickhouse-sql.js';

export interface SchemaLayout {
  /** Database on every node. */
  database: string;
  /** Cluster name from EVENT_STORE_CLUSTER; absent on a single server. */
  cluster?: string;
}

export interface ClickHouseMigration {
  name: string;
  /** Idempotent statements (a node may have been half-migrated by an interrupted release). */
  statements: (layout: SchemaLayout) => string[];
}

/** The dedupe key, which is also the sort key (time second so time ranges use the index). */
export const EVENT_KEY = 'project_id, time, event, distinct_id, insert_id';

const EVENTS_COLUMNS = `(
  project_id UInt64,
  event String,
  distinct_id String,
  time Int64,
  insert_id String,
  device_id String,
  ver UInt64,
  is_deleted UInt8,
  is_new UInt8,
  seq UInt64,
  source String,
  ingested_at Int64,
  properties String,
  prop_keys Array(String),
  prop_types Array(UInt8),
  prop_nums Array(Float64),
  prop_strs Array(String),
  prop_canon Array(String),
  prop_elem_types Array(Array(UInt8)),
  prop_elem_nums Array(Array(Float64)),
  prop_elem_strs Array(Array(String)),
  prop_elem_canon Array(Array(String))
)`;

const USAGE_COLUMNS = `(
  project_id UInt64,
  month UInt32,
  source String,
  events UInt64
)`;

const LINKS_COLUMNS = `(
  project_id UInt64,
  device_id String,
  user_id String,
  ver UInt64
)`;

/** `CREATE TABLE` for a MergeTree-family table, plus its Distributed twin on a cluster. */
function table(layout: SchemaLayout, name: string, columns: string, engine: string, shardKey: string): string[] {
  const db = ident(layout.database);
  if (!layout.cluster) return [`CREATE TABLE IF NOT EXISTS ${db}.${name} ${columns} ENGINE = ${engine}`];
  return [
    `CREATE TABLE IF NOT EXISTS ${db}.${name}_local ${columns} ENGINE = ${engine}`,
    `CREATE TABLE IF NOT EXISTS ${db}.${name} AS ${db}.${name}_local ENGINE = Distributed(${ident(layout.cluster)}, ${db}, ${name}_local, ${shardKey})`,
  ];
}

function usageView(layout: SchemaLayout): string {
  const db = ident(layout.database);
  const suffix = layout.cluster ? '_local' : '';
  return (
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.usage_mv TO ${db}.usage${suffix} AS ` +
    `SELECT project_id, toYYYYMM(toDateTime(intDiv(ingested_at, 1000), 'UTC')) AS month, source, toUInt64(count()) AS events ` +
    `FROM ${db}.events${suffix} WHERE is_new = 1 GROUP BY project_id, month, source`
  );
}

export const clickhouseMigrations: readonly ClickHouseMigration[] = [
  {
    name: '001-events-and-identity-links',
    statements: (layout) => [
      // ReplacingMergeTree(ver): of all rows with one key, the highest `ver` is the event's
      // current state (an update or a delete marker writes a newer one). Merges are only an
      // optimisation: every read collapses versions itself (FINAL or argMax), so it is exact.
      ...table(
        layout,
        'events',
        EVENTS_COLUMNS,
        `ReplacingMergeTree(ver) ORDER BY (${EVENT_KEY})`,
        `cityHash64(project_id, event, distinct_id, time, insert_id)`,
      ),
      // First link wins: readers take argMin(user_id, ver) per device; nothing is ever replaced.
      ...table(layout, 'identity_links', LINKS_COLUMNS, 'MergeTree ORDER BY (project_id, device_id, ver)', 'cityHash64(project_id, device_id)'),
      // Usage (newly stored events per month and source) is counted by the same INSERT that
      // stores the events: a materialized view sums the rows flagged is_new. On a cluster each
      // shard's view fills its own usage_local; the Distributed `usage` adds them up.
      ...table(layout, 'usage', USAGE_COLUMNS, 'SummingMergeTree(events) ORDER BY (project_id, month, source)', 'rand()'),
      usageView(layout),
    ],
  },
];

export const MIGRATIONS_TABLE = 'event_store_migrations';

/** Applied-migration bookkeeping, kept on every node (nodes are migrated one by one). */
export function migrationsTableDdl(database: string): string {
  return `CREATE TABLE IF NOT EXISTS ${ident(database)}.${MIGRATIONS_TABLE} (name String, applied_at Int64) ENGINE = TinyLog`;
}

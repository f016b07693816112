/**
 * Applies the ClickHouse schema to every node. 18.16 without ZooKeeper has no `ON CLUSTER`
 * DDL, so on a cluster the release step connects to each shard node (EVENT_STORE_SHARD_URLS)
 * and creates the local and Distributed tables there; each node records what it has applied.
 */
import { ClickHouseConnection } from './clickhouse-connection.js';
import { hotColumnDefinition, hotColumnName, parseHotProperties } from './clickhouse-hot-properties.js';
import { clickhouseMigrations, migrationsTableDdl, MIGRATIONS_TABLE, type SchemaLayout } from './clickhouse-schema.js';
import { ident, str } from './clickhouse-sql.js';
import { parseClickHouseUrl } from './clickhouse-url.js';

export interface EventStoreSchemaConfig {
  EVENT_STORE_URL: string;
  EVENT_STORE_CLUSTER?: string;
  /** Cluster only: one clickhouse:// URL per shard node (same credentials and database). */
  EVENT_STORE_SHARD_URLS?: string;
  /** Properties that get a segment column of their own (clickhouse-hot-properties.ts); unset: the defaults. */
  EVENT_STORE_HOT_PROPERTIES?: string;
}

/** The node URLs DDL must run on: every shard of the cluster, or the one server. */
export function schemaNodes(config: EventStoreSchemaConfig): string[] {
  if (!config.EVENT_STORE_CLUSTER) return [config.EVENT_STORE_URL];
  const nodes = (config.EVENT_STORE_SHARD_URLS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (nodes.length === 0) {
    throw new Error('EVENT_STORE_CLUSTER is set but EVENT_STORE_SHARD_URLS is not: list every shard node (clickhouse://…) so release can create the local tables on each');
  }
  return nodes;
}

async function migrateNode(conn: ClickHouseConnection, layout: SchemaLayout): Promise<string[]> {
  const db = ident(layout.database);
  await conn.command(`CREATE DATABASE IF NOT EXISTS ${db}`);
  await conn.command(migrationsTableDdl(layout.database));
  const done = new Set((await conn.rows<{ name: string }>(`SELECT name FROM ${db}.${MIGRATIONS_TABLE}`)).map((r) => r.name));
  const applied: string[] = [];
  for (const m of clickhouseMigrations) {
    if (done.has(m.name)) continue;
    for (const sql of m.statements(layout)) await conn.command(sql);
    await conn.insert(`${db}.${MIGRATIONS_TABLE}`, [{ name: m.name, applied_at: Date.now() }]);
    applied.push(m.name);
  }
  return applied;
}

/**
 * Adds the segment column of each hot property the node's events table lacks (on a cluster to
 * the shard's local table and to the Distributed table over it). Metadata only: existing parts
 * compute the column from their arrays when read. Columns of properties no longer listed stay
 * (dropping one is an operator's decision, `ALTER TABLE … DROP COLUMN`).
 */
async function addHotColumns(conn: ClickHouseConnection, layout: SchemaLayout, properties: readonly string[]): Promise<string[]> {
  const db = ident(layout.database);
  const tables = layout.cluster ? ['events_local', 'events'] : ['events'];
  const added: string[] = [];
  for (const table of tables) {
    const have = new Map(
      (await conn.rows<{ name: string; comment: string }>(`SELECT name, comment FROM system.columns WHERE database = ${str(layout.database)} AND table = ${str(table)}`)).map(
        (r) => [r.name, r.comment],
      ),
    );
    for (const property of properties) {
      const column = hotColumnName(property);
      if (!have.has(column)) {
        await conn.command(`ALTER TABLE ${db}.${table} ADD COLUMN ${hotColumnDefinition(property, table === 'events_local' ? 'DEFAULT' : 'MATERIALIZED')}`);
        if (table === 'events') added.push(`hot property ${property}`);
      }
      // 18.16 drops a COMMENT given in ADD COLUMN; readers find the column by it.
      if (have.get(column) !== property) await conn.command(`ALTER TABLE ${db}.${table} COMMENT COLUMN ${column} ${str(property)}`);
    }
  }
  return added;
}

/**
 * A cluster must be defined on the entry node, and EVENT_STORE_SHARD_URLS must name as many
 * nodes as it has shards: a shard without tables would fail every Distributed query later.
 */
async function checkCluster(config: EventStoreSchemaConfig, nodes: readonly string[]): Promise<void> {
  if (!config.EVENT_STORE_CLUSTER) return;
  const conn = new ClickHouseConnection({ ...parseClickHouseUrl(config.EVENT_STORE_URL), database: 'default' });
  try {
    const [row] = await conn.rows<{ shards: number }>(`SELECT uniqExact(shard_num) AS shards FROM system.clusters WHERE cluster = ${str(config.EVENT_STORE_CLUSTER)}`);
    const shards = Number(row?.shards ?? 0);
    if (shards === 0) throw new Error(`EVENT_STORE_CLUSTER: cluster '${config.EVENT_STORE_CLUSTER}' is not in remote_servers of ${parseClickHouseUrl(config.EVENT_STORE_URL).url}`);
    if (shards !== nodes.length) {
      throw new Error(`EVENT_STORE_SHARD_URLS lists ${nodes.length} nodes but cluster '${config.EVENT_STORE_CLUSTER}' has ${shards} shards: list one node per shard`);
    }
  } finally {
    await conn.close();
  }
}

/** Creates the database and applies pending migrations on every node; returns `node: name` lines. */
export async function migrateEventStore(config: EventStoreSchemaConfig): Promise<string[]> {
  const out: string[] = [];
  const nodes = schemaNodes(config);
  const hot = parseHotProperties(config.EVENT_STORE_HOT_PROPERTIES);
  await checkCluster(config, nodes);
  for (const url of nodes) {
    const target = parseClickHouseUrl(url);
    // The database may not exist yet: connect to `default` for the DDL.
    const conn = new ClickHouseConnection({ ...target, database: 'default' });
    try {
      const layout = { database: target.database, cluster: config.EVENT_STORE_CLUSTER };
      const applied = [...(await migrateNode(conn, layout)), ...(await addHotColumns(conn, layout, hot))];
      for (const name of applied) out.push(`${target.url}/${target.database}: ${name}`);
    } finally {
      await conn.close();
    }
  }
  return out;
}

/** Drops the database on every node (tests and the move command's scratch targets only). */
export async function dropEventStore(config: EventStoreSchemaConfig): Promise<void> {
  for (const url of schemaNodes(config)) {
    const target = parseClickHouseUrl(url);
    const conn = new ClickHouseConnection({ ...target, database: 'default' });
    try {
      await conn.command(`DROP DATABASE IF EXISTS ${ident(target.database)}`);
    } finally {
      await conn.close();
    }
  }
}


/**
 * The ClickHouse schema on a real 18.16 server and on the two-shard loopback cluster: migrations
 * apply idempotently on every node, and every version of one event lands on one shard so FINAL
 * per shard is exact through the Distributed table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseConnection } from '../../src/store/clickhouse/clickhouse-connection.js';
import { DEFAULT_HOT_PROPERTIES, hotColumnName } from '../../src/store/clickhouse/clickhouse-hot-properties.js';
import { migrateEventStore } from '../../src/store/clickhouse/clickhouse-migrate.js';
import { parseClickHouseUrl } from '../../src/store/clickhouse/clickhouse-url.js';
import { clickhouseKinds, createTestClickHouse, type TestClickHouse } from '../helpers/clickhouse.js';

function row(insertId: string, ver: number, isDeleted: number, properties: string) {
  return { project_id: 7, event: 'e', distinct_id: 'u', time: 1_700_000_000_000, insert_id: insertId, ver, is_deleted: isDeleted, is_new: 0, seq: ver, source: 'test', ingested_at: 0, properties, prop_keys: [], prop_types: [], prop_nums: [], prop_strs: [] };
}

describe.each(clickhouseKinds())('ClickHouse schema on %s', (kind) => {
  let ch: TestClickHouse;
  let conn: ClickHouseConnection;

  beforeAll(async () => {
    ch = await createTestClickHouse(kind);
    conn = new ClickHouseConnection(parseClickHouseUrl(ch.config.EVENT_STORE_URL), { distributedSync: kind === 'clickhouse-cluster' });
  });
  afterAll(async () => {
    await conn?.close();
    await ch?.destroy();
  });

  it('applies nothing the second time', async () => {
    expect(await migrateEventStore(ch.config)).toEqual([]);
    const tables = await conn.rows<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${ch.database}' ORDER BY name`);
    const expected =
      kind === 'clickhouse'
        ? ['event_store_migrations', 'events', 'identity_links', 'usage', 'usage_mv']
        : ['event_store_migrations', 'events', 'events_local', 'identity_links', 'identity_links_local', 'usage', 'usage_local', 'usage_mv'];
    expect(tables.map((t) => t.name)).toEqual(expected);
  });

  it('gives each hot property a segment column named by its COMMENT, once; rows older than the column read it too', async () => {
    const hotColumns = async (table: string) =>
      Object.fromEntries(
        (
          await conn.rows<{ name: string; comment: string; default_kind: string }>(
            `SELECT name, comment, default_kind FROM system.columns WHERE database = '${ch.database}' AND table = '${table}' AND name LIKE 'seg%'`,
          )
        ).map((c) => [c.comment, `${c.name} ${c.default_kind}`]),
      );
    const tables = kind === 'clickhouse' ? { events: 'MATERIALIZED' } : { events: 'MATERIALIZED', events_local: 'DEFAULT' };
    for (const [table, how] of Object.entries(tables)) {
      expect(await hotColumns(table)).toEqual(Object.fromEntries(DEFAULT_HOT_PROPERTIES.map((p) => [p, `${hotColumnName(p)} ${how}`])));
    }
    await conn.insert('events', [{ ...row('hot-old', 1, 0, '{"plan":"pro"}'), project_id: 8, prop_keys: ['plan'], prop_types: [4], prop_nums: [0], prop_strs: ['pro'] }]);
    const config = { ...ch.config, EVENT_STORE_HOT_PROPERTIES: ' plan , mp_country_code,plan' };
    expect((await migrateEventStore(config)).map((l) => l.replace(/^.*: /, ''))).toEqual(kind === 'clickhouse' ? ['hot property plan'] : ['hot property plan', 'hot property plan']);
    expect(await migrateEventStore(config)).toEqual([]);
    for (const [table, how] of Object.entries(tables)) expect((await hotColumns(table)).plan).toBe(`${hotColumnName('plan')} ${how}`);
    await conn.insert('events', [{ ...row('hot-new', 1, 0, '{}'), project_id: 8 }]);
    const labels = await conn.rows<{ insert_id: string; l: string[] }>(`SELECT insert_id, ${hotColumnName('plan')} AS l FROM events WHERE project_id = 8 ORDER BY insert_id`);
    expect(labels).toEqual([
      { insert_id: 'hot-new', l: ['undefined'] },
      { insert_id: 'hot-old', l: ['pro'] },
    ]);
    await expect(migrateEventStore({ ...ch.config, EVENT_STORE_HOT_PROPERTIES: 'plan,time' })).rejects.toThrow(/time is a column of every event already/);
  });

  it('reads the newest version of a key exactly, before any merge', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `id-${i}`);
    // Separate inserts make separate parts: nothing is merged yet when we read.
    await conn.insert('events', ids.map((id) => row(id, 1, 0, '{"v":1}')));
    await conn.insert('events', ids.map((id) => row(id, 2, 0, '{"v":2}')));
    await conn.insert('events', ids.slice(0, 10).map((id) => row(id, 3, 1, '{}')));
    const [live] = await conn.rows<{ n: number }>(`SELECT count() AS n FROM events FINAL WHERE project_id = 7 AND is_deleted = 0 AND properties = '{"v":2}'`);
    expect(live!.n).toBe(30);
    const [all] = await conn.rows<{ n: number }>('SELECT count() AS n FROM events WHERE project_id = 7');
    expect(all!.n).toBe(90);
  });

  // Only the cluster kind has shards to co-locate on; on one server there is nothing to check.
  it.runIf(kind === 'clickhouse-cluster')('puts every version of an event on one shard, and both shards get events', async () => {
    const perShard: number[] = [];
    for (const url of ch.config.EVENT_STORE_SHARD_URLS!.split(',')) {
      const shard = new ClickHouseConnection(parseClickHouseUrl(url));
      try {
        const rows = await shard.rows<{ insert_id: string; n: number }>('SELECT insert_id, count() AS n FROM events_local WHERE project_id = 7 GROUP BY insert_id');
        perShard.push(rows.length);
        // A shard holding a key holds all its versions (2 or 3 inserted above).
        for (const r of rows) expect(r.n).toBe(Number(r.insert_id.slice(3)) < 10 ? 3 : 2);
      } finally {
        await shard.close();
      }
    }
    expect(perShard.reduce((a, b) => a + b, 0)).toBe(40);
    expect(Math.min(...perShard)).toBeGreaterThan(0);
  });
});

// Conditional: needs the two-shard cluster .ci/run starts (TEST_CLICKHOUSE_CLUSTER*), so CI always runs it.
describe.runIf(clickhouseKinds().includes('clickhouse-cluster'))('ClickHouse cluster configuration', () => {
  it('refuses a shard list that does not cover the cluster, and an unknown cluster', async () => {
    const shards = process.env.TEST_CLICKHOUSE_SHARD_URLS!.split(',');
    const base = { EVENT_STORE_URL: process.env.TEST_CLICKHOUSE_CLUSTER_URL!, EVENT_STORE_CLUSTER: process.env.TEST_CLICKHOUSE_CLUSTER! };
    await expect(migrateEventStore({ ...base, EVENT_STORE_SHARD_URLS: shards[0] })).rejects.toThrow(/lists 1 nodes but cluster .* has 2 shards/);
    await expect(migrateEventStore({ ...base, EVENT_STORE_CLUSTER: 'no_such_cluster', EVENT_STORE_SHARD_URLS: shards.join(',') })).rejects.toThrow(/not in remote_servers/);
    await expect(migrateEventStore(base)).rejects.toThrow(/EVENT_STORE_SHARD_URLS is not/);
  });
});

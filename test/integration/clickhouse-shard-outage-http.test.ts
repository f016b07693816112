/**
 * One shard of a two-shard ClickHouse cluster down — not the server the service talks to, the
 * other one: writes and reads that touch it answer 503 with Retry-After (never 500), the store's
 * readiness check fails, nothing is half-stored, and retries once it is back store each event
 * once. ClickHouse 18.16 words its errors without the name current servers end them with, so
 * this is what proves the error codes are read there too. Two servers of its own (8128, 8129).
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';
import { basicAuth, type SeededProject } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { startClickHouseApp, type ClickHouseApp } from '../helpers/clickhouse-app.js';
import { createLoneClickHouse, type LoneClickHouse } from '../helpers/clickhouse-server.js';

// Conditional: needs ClickHouse installed; .ci/run installs it and sets TEST_CLICKHOUSE_URL, so CI always runs it.
describe.runIf(process.env.TEST_CLICKHOUSE_URL)('ingestion and reads while one ClickHouse shard is down', () => {
  const cluster = { name: 'outage_pair', tcpPorts: [9128, 9129] };
  let entry: LoneClickHouse;
  let other: LoneClickHouse;
  let running: ClickHouseApp;
  let app: TestApp;
  let p: SeededProject;
  let store: ClickHouseEventStore;

  beforeAll(async () => {
    [entry, other] = await Promise.all([createLoneClickHouse(8128, { cluster }), createLoneClickHouse(8129, { cluster })]);
    const storeConfig = {
      EVENT_STORE_URL: withDatabase(entry.url, 'test_shard_outage'),
      EVENT_STORE_CLUSTER: cluster.name,
      EVENT_STORE_SHARD_URLS: [entry.url, other.url].map((u) => withDatabase(u, 'test_shard_outage')).join(','),
    };
    running = await startClickHouseApp(storeConfig);
    ({ app, store, p } = running);
  }, 60_000);
  afterAll(async () => {
    await running?.close();
    await Promise.all([entry?.destroy(), other?.destroy()]);
  });

  // Many distinct keys, so every batch lands on both shards.
  const batch = (b: number) =>
    Array.from({ length: 200 }, (_, i) => ({ event: `E${i % 7}`, properties: { time: 1_760_000_000 + b * 600 + i, distinct_id: `u${i}`, $insert_id: `s${b}-${i}` } }));
  const auth = () => basicAuth(p.sa.username, p.sa.secret);
  const importBatch = (b: number) =>
    fetch(`${app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: auth(), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: zlib.gzipSync(JSON.stringify(batch(b))),
    });
  const exportAll = () => fetch(`${app.url}/api/2.0/export?project_id=${p.id}&from_date=2025-10-01&to_date=2025-10-31`, { headers: { authorization: auth() } });

  it('answers 503 while the other shard is down, and retries store every event once', async () => {
    expect((await importBatch(0)).status).toBe(200);
    await other.kill();

    const down = await importBatch(1);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toMatchObject({ code: 503, error: expect.stringMatching(/event store unavailable/) });
    const read = await exportAll();
    expect(read.status).toBe(503);
    expect(await read.json()).toMatchObject({ code: 503 });
    const report = await fetch(`${app.url}/api/2.0/segmentation?project_id=${p.id}&event=E1&from_date=2025-10-01&to_date=2025-10-31`, { headers: { authorization: auth() } });
    expect(report.status).toBe(503);
    // /readyz's event-store check (web.ts) asks every shard, so a balancer stops sending traffic.
    await expect(store.ping()).rejects.toThrow();

    await other.start();
    await store.ping();
    expect((await importBatch(1)).status).toBe(200);
    expect((await importBatch(0)).status).toBe(200); // a replay
    expect(await store.count(p.id)).toBe(400);
    const lines = (await (await exportAll()).text()).trim().split('\n');
    expect(new Set(lines.map((l) => JSON.parse(l).properties.$insert_id)).size).toBe(400);
  }, 90_000);
});

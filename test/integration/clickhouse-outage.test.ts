/**
 * ClickHouse killed in the middle of ingestion: writes fail with StoreUnavailableError (the
 * HTTP surfaces answer 503), nothing is stored twice, and retrying every batch after the server
 * is back stores each event exactly once. Uses its own server on port 8126 (never the shared one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEventRows, type EventRows } from '../../src/store/event-rows.js';
import { StoreUnavailableError } from '../../src/lib/errors.js';
import { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';
import { createLoneClickHouse, type LoneClickHouse } from '../helpers/clickhouse-server.js';

function batch(b: number, size: number): EventRows {
  const rows = emptyEventRows();
  for (let i = 0; i < size; i++) {
    rows.event.push('Played');
    rows.distinctId.push(`u${i % 7}`);
    rows.time.push(1_700_000_000_000 + b * 1000 + i);
    rows.insertId.push(`b${b}-${i}`);
    rows.properties.push(JSON.stringify({ b, i }));
    rows.deviceId.push(null);
  }
  return rows;
}

// Conditional: needs ClickHouse installed; .ci/run installs it and sets TEST_CLICKHOUSE_URL, so CI always runs it.
describe.runIf(process.env.TEST_CLICKHOUSE_URL)('ClickHouse outage during ingestion', () => {
  let server: LoneClickHouse;
  let store: ClickHouseEventStore;

  beforeAll(async () => {
    server = await createLoneClickHouse(8126);
    store = new ClickHouseEventStore({ EVENT_STORE_URL: withDatabase(server.url, 'test_outage') });
    await store.migrate();
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await server?.destroy();
  });

  it('fails writes as unavailable while down, and retries store each event once', async () => {
    const BATCHES = 40;
    const SIZE = 250;
    const acknowledged = new Set<number>();
    const failed: unknown[] = [];
    // Writers keep going while the server is killed under them.
    const writer = (async () => {
      for (let b = 0; b < BATCHES; b++) {
        try {
          await store.writeBatch({ projectId: 1, source: 'import', rows: batch(b, SIZE), now: Date.now() });
          acknowledged.add(b);
        } catch (err) {
          failed.push(err);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await new Promise((r) => setTimeout(r, 150));
    await server.kill();
    await writer;
    expect(failed.length).toBeGreaterThan(0);
    for (const err of failed) expect(err).toBeInstanceOf(StoreUnavailableError);
    await expect(store.count(1)).rejects.toBeInstanceOf(StoreUnavailableError);

    await server.start();
    // Every acknowledged batch is there in full (a 200 meant durable) before any retry.
    const before = await store.count(1);
    expect(before).toBeGreaterThanOrEqual(acknowledged.size * SIZE);
    expect(before % SIZE).toBe(0); // no batch half-stored
    // The client retries everything it did not get a 200 for — and, to be sure, all the rest too.
    let newOnRetry = 0;
    for (let b = 0; b < BATCHES; b++) newOnRetry += await store.writeBatch({ projectId: 1, source: 'import', rows: batch(b, SIZE), now: Date.now() });
    expect(await store.count(1)).toBe(BATCHES * SIZE);
    expect(before + newOnRetry).toBe(BATCHES * SIZE);
  }, 60_000);
});

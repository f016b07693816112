/**
 * The ingest worker pool: batches (and batch-import chunks) prepared on a worker thread equal those prepared inline, errors
 * keep their status across the thread boundary, a dying worker's batch is finished inline, and
 * /import through the pool stores exactly what the inline path stores.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents } from '../helpers/events.js';
import { IngestWorkerPool, ingestWorkerPool } from '../../src/ingest/ingest-workers.js';
import { prepareEventBatch, type PrepareInput } from '../../src/ingest/events-prepare.js';
import { prepareEventChunk, RawChunkBuilder, type EventChunkInput } from '../../src/ingest/batch-chunk.js';
import { DEFAULT_EVENT_LIMITS } from '../../src/domain/event-record.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const NOW = Date.now();
const records = Array.from({ length: 300 }, (_, i) => ({
  event: `e${i % 4}`,
  properties: {
    time: Math.floor(NOW / 1000) - i,
    distinct_id: `u${i}`,
    ...(i % 2 ? { $insert_id: `w-${i}` } : {}),
    // Identified events link their device, anonymous ones record it (links cross the thread too).
    ...(i % 3 === 0 ? { $device_id: `d${i % 50}`, $user_id: `u${i}` } : i % 3 === 1 ? { $device_id: `d${i % 50}` } : {}),
    n: i,
    deep: { a: [i] },
  },
}));
records.push({ event: '', properties: { time: 1, distinct_id: 'bad' } } as never);

function input(body: Buffer, over: Partial<PrepareInput> = {}): PrepareInput {
  return { body, gzip: true, ndjson: false, maxBytes: 10 * 1024 * 1024, maxRecords: 2000, validate: { strict: true, limits: DEFAULT_EVENT_LIMITS, now: NOW }, ...over };
}

describe('IngestWorkerPool', () => {
  const pool = new IngestWorkerPool(1);
  afterAll(() => pool.close());

  it('prepares on a worker exactly what inline preparation gives, and carries error statuses over', async () => {
    expect(await pool.warm()).toBe(true);
    const body = zlib.gzipSync(JSON.stringify(records));
    const viaWorker = await pool.prepare(input(body));
    expect(viaWorker).toEqual(prepareEventBatch(input(body)));
    expect(viaWorker.rows.event).toHaveLength(300);
    expect(viaWorker.rows.links.length).toBeGreaterThan(10);
    expect(viaWorker.rejected).toEqual([{ index: 300, field: 'event', message: expect.any(String) }]);

    const bomb = zlib.gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x20));
    await expect(pool.prepare(input(bomb))).rejects.toMatchObject({ name: 'ValidationError', status: 413 });
    await expect(pool.prepare(input(body.subarray(0, 40)))).rejects.toMatchObject({ status: 400, message: expect.stringContaining('gzip') });
    await expect(pool.prepare(input(Buffer.from('[{'), { gzip: false }))).rejects.toMatchObject({ status: 400 });
    const nd = Buffer.from(records.slice(0, 3).map((r) => JSON.stringify(r)).join('\n'));
    expect((await pool.prepare(input(nd, { gzip: false, ndjson: true }))).rows.insertId).toHaveLength(3);
  });

  it('prepares batch-import chunks on a worker exactly as inline: rows, stamps and rejections at their file positions', async () => {
    expect(await pool.warm()).toBe(true);
    const lines = records.map((r) => JSON.stringify(r));
    lines.splice(7, 0, '{"event": "cut off", "prop');
    // Units start at file position 5000: a resumed run's chunk.
    const builder = new RawChunkBuilder(5000);
    for (const line of lines) builder.addJson(Buffer.from(line));
    const raw = builder.take();
    expect(raw).toMatchObject({ kind: 'json', from: 5000, units: 302 });
    const chunkInput: EventChunkInput = { raw, validate: { strict: true, now: NOW, stamp: { $import: true } } };
    const viaWorker = await pool.prepareChunk(chunkInput);
    expect(viaWorker).toEqual(prepareEventChunk(chunkInput));
    expect(viaWorker).toMatchObject({ from: 5000, units: 302 });
    expect(viaWorker.rows.event).toHaveLength(300);
    expect(JSON.parse(viaWorker.rows.properties[0]!)).toMatchObject({ $import: true, n: 0 });
    expect(viaWorker.rejected).toEqual([
      { index: 5007, message: expect.stringContaining('not valid JSON'), record: '{"event": "cut off", "prop' },
      { index: 5301, field: 'event', message: expect.any(String), record: expect.stringContaining('"bad"') },
    ]);
    // The builder starts the next chunk where this one ended.
    builder.addJson(Buffer.from(lines[0]!));
    expect(builder.take()).toMatchObject({ from: 5302, units: 1 });
  });

  it("finishes a dying worker's batches inline, and close() too", async () => {
    const p2 = new IngestWorkerPool(1);
    expect(await p2.warm()).toBe(true);
    const body = zlib.gzipSync(JSON.stringify(records));
    const pending = Array.from({ length: 5 }, () => p2.prepare(input(body)));
    const slots = (p2 as unknown as { slots: { worker: { terminate: () => Promise<number> } }[] }).slots;
    await slots[0]!.worker.terminate();
    const results = await Promise.all(pending);
    for (const r of results) expect(r.rows.event).toHaveLength(300);
    expect(p2.readyWorkers).toBe(0);
    await p2.close();
  });
});

describe.each(dbKinds())('/import through the worker pool on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { INGEST_WORKERS: 1, INGEST_WORKER_MIN_BYTES: 0 });
    expect(await ingestWorkerPool(1).warm()).toBe(true);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('stores a gzip batch and answers strict failures exactly as inline', async () => {
    const p = await seedProject(t.db);
    const before = ingestWorkerPool(1).completedOnWorkers;
    const res = await fetch(`${app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: p.basic },
      body: zlib.gzipSync(JSON.stringify(records)),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 400,
      error: 'some data points in the request failed validation',
      status: 'Bad Request',
      num_records_imported: 300,
      failed_records: [{ index: 300, field: 'event', message: expect.any(String) }],
    });
    expect(await countEvents(t.db, p.id)).toBe(300);
    expect(ingestWorkerPool(1).completedOnWorkers).toBe(before + 1);
    // e0 is the latest event (times count down with i).
    const stored = await pageEvents(t.db, { projectId: p.id, fromMs: Math.floor(NOW / 1000) * 1000, toMs: NOW + 1, limit: 1 });
    expect(stored[0]).toMatchObject({ event: 'e0', distinctId: 'u0', time: Math.floor(NOW / 1000) * 1000, properties: { n: 0, deep: { a: [0] } } });
    const bad = await fetch(`${app.url}/import?project_id=${p.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: p.basic },
      body: zlib.gzipSync('[{"event":'),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ code: 400, error: expect.stringContaining('not valid JSON'), status: 'Bad Request' });
  });
});

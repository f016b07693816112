/**
 * Our own stores out of reach — the PostgreSQL database (accounts, runs and events), or the
 * ClickHouse event store — behind a TCP proxy the test takes down and brings back:
 * - every surface answers 503 with Retry-After in its own error shape (never 500) — also the
 *   requests in flight when the store goes away — and the client's retry once the store is back
 *   stores each event exactly once;
 * - a batch import that meets the outage waits it out without using any of its attempts, and
 *   finishes with each event stored once when the store returns.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import zlib from 'node:zlib';
import { Writable } from 'node:stream';
import pino from 'pino';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, type Db } from '../../src/db/knex.js';
import { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestClickHouse, type TestClickHouse } from '../helpers/clickhouse.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { attachEventStore, countEvents } from '../helpers/events.js';
import { body, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';
import { redisKinds, redisOverrides, type RedisKind } from '../helpers/redis-kinds.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

type OutageKind = 'postgres database' | 'clickhouse event store';

function outageKinds(): [OutageKind, RedisKind][] {
  const stores: OutageKind[] = [];
  if (process.env.TEST_DATABASE_URL) stores.push('postgres database');
  if (process.env.TEST_CLICKHOUSE_URL) stores.push('clickhouse event store');
  return stores.flatMap((s) => redisKinds().map((r): [OutageKind, RedisKind] => [s, r]));
}

/** The same server, reached through the proxy's port. */
function viaProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}

// Conditional: needs PostgreSQL or ClickHouse; .ci/run sets TEST_DATABASE_URL and TEST_CLICKHOUSE_URL, so CI runs every case.
describe.runIf(outageKinds().length > 0).each(outageKinds())('%s out of reach, queues on %s', (storeKind, redisKind) => {
  let t: TestDb;
  let proxy: TcpProxy;
  /** What the service uses: through the proxy. */
  let db: Db;
  let ch: ClickHouseEventStore | undefined;
  let chDatabase: TestClickHouse | undefined;
  let app: TestApp;
  let p: SeededProject;
  /** The database client's log lines (PostgreSQL case): JSON, as the process writes them. */
  const logLines: Record<string, unknown>[] = [];
  const logSink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'outage-uploads-'));
  const overrides = { ...redisOverrides(redisKind), UPLOAD_DIR: uploads, RATE_LIMIT_EVENTS_PER_SEC: 0, JOB_OUTAGE_RETRY_MS: 200 };

  beforeAll(async () => {
    if (storeKind === 'postgres database') {
      t = await createTestDb('postgres');
      const base = new URL(process.env.TEST_DATABASE_URL!);
      proxy = await startTcpProxy({ host: base.hostname, port: Number(base.port || 5432) });
      db = createDb({ DATABASE_URL: viaProxy(process.env.TEST_DATABASE_URL!, proxy) }, { schema: t.schema, log: pino({ level: 'warn' }, logSink) });
      app = await startTestApp(db, overrides);
    } else {
      t = await createTestDb('sqlite');
      db = t.db;
      const base = new URL(process.env.TEST_CLICKHOUSE_URL!.replace(/^clickhouse:/, 'http:'));
      proxy = await startTcpProxy({ host: base.hostname, port: Number(base.port || 8123) });
      chDatabase = await createTestClickHouse('clickhouse');
      const storeUrl = withDatabase(viaProxy(process.env.TEST_CLICKHOUSE_URL!, proxy), chDatabase.database);
      ch = new ClickHouseEventStore({ EVENT_STORE_URL: storeUrl });
      attachEventStore(db, ch);
      app = await startTestApp(db, { ...overrides, EVENT_STORE_URL: storeUrl });
    }
    p = await seedProject(t.db, { role: 'owner' });
  }, 60_000);
  afterAll(async () => {
    await proxy?.up();
    await app?.queues.queues['batch-import'].obliterate({ force: true });
    await app?.close();
    await ch?.close();
    await chDatabase?.destroy();
    if (db !== t?.db) await db?.destroy();
    await t?.destroy();
    await proxy?.close();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  const batch = (b: number) =>
    Array.from({ length: 300 }, (_, i) => ({ event: 'Played', properties: { time: 1_760_000_000 + b * 600 + i, distinct_id: `u${i % 9}`, $insert_id: `o${b}-${i}` } }));
  const importBatch = (b: number) =>
    fetch(`${app.url}/import?project_id=${p.id}&strict=1`, {
      method: 'POST',
      headers: { authorization: basicAuth(p.sa.username, p.sa.secret), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: zlib.gzipSync(JSON.stringify(batch(b))),
    });

  it('answers 503 with Retry-After in each surface shape while down; retries afterwards store each event once', async () => {
    const data = Buffer.from(JSON.stringify([{ event: 'x', properties: { token: p.token, distinct_id: 'a', time: Math.floor(Date.now() / 1000), $insert_id: 't1' } }])).toString('base64');
    expect((await importBatch(0)).status).toBe(200);
    await proxy.down();
    try {
      const refused = await importBatch(1);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      const refusedBody = (await refused.json()) as Record<string, unknown>;
      expect(refusedBody).toMatchObject({ code: 503, status: 'Service Unavailable' });
      expect(String(refusedBody.error)).toMatch(storeKind === 'postgres database' ? /^database unavailable: retry later/ : /^event store unavailable: retry later/);

      const track = await fetch(`${app.url}/track?verbose=1&data=${encodeURIComponent(data)}`);
      expect(track.status).toBe(503);
      expect(await track.json()).toMatchObject({ status: 0, error: expect.stringMatching(/unavailable/) });

      const exported = await fetch(`${app.url}/api/2.0/export?project_id=${p.id}&from_date=2025-10-01&to_date=2025-10-31`, { headers: { authorization: p.basic } });
      expect(exported.status).toBe(503);
      expect(exported.headers.get('retry-after')).toBe('5');
      expect(await exported.json()).toMatchObject({ code: 503, status: 'Service Unavailable' });

      if (storeKind === 'postgres database') {
        // The app API reads the database on every call.
        const listed = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports`, { headers: { authorization: p.basic } });
        expect(listed.status).toBe(503);
        expect(await listed.json()).toMatchObject({ status: 'error', type: 'unavailable', error: expect.stringMatching(/^database unavailable/) });
        // knex's own warnings about the lost connections are structured log lines, not console text.
        expect(logLines.some((l) => l.msg === 'database client warning' && /ECONNREFUSED|Connection/.test(String(l.detail)))).toBe(true);
      }
    } finally {
      await proxy.up();
    }
    // The client retries what was refused, and replays what was not: each event is stored once.
    await until(async () => (await importBatch(1)).status === 200, 20_000, 200);
    expect((await importBatch(0)).status).toBe(200);
    expect((await fetch(`${app.url}/track?data=${encodeURIComponent(data)}`)).status).toBe(200);
    expect(await countEvents(db, p.id)).toBe(601);
  }, 60_000);

  it('requests in flight when the store goes away answer 503, never 500; retrying what was refused stores each event once', async () => {
    const q = await seedProject(t.db, { role: 'owner' });
    const send = (b: number) =>
      fetch(`${app.url}/import?project_id=${q.id}&strict=1`, {
        method: 'POST',
        headers: { authorization: q.basic, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: zlib.gzipSync(JSON.stringify(batch(100 + b))),
      });
    const statuses: number[] = [];
    const refused = new Set<number>();
    // Four clients, as the SDKs' import tools run them, while the store is cut under them.
    const client = async (first: number) => {
      for (let b = first; b < 40; b += 4) {
        const res = await send(b);
        statuses.push(res.status);
        if (res.status !== 200) refused.add(b);
        await res.arrayBuffer();
      }
    };
    const clients = Promise.all([0, 1, 2, 3].map(client));
    await until(async () => statuses.length >= 4, 20_000, 5);
    await proxy.down();
    await new Promise((r) => setTimeout(r, 400));
    await proxy.up();
    await clients;
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    for (const b of refused) await until(async () => (await send(b)).status === 200, 20_000, 200);
    expect(await countEvents(db, q.id)).toBe(40 * 300);
  }, 60_000);

  /**
   * A batch import of `n` events whose store goes away — before the worker starts, or in the
   * middle of the run (a commit in flight is cut), and then again after it resumed — and comes
   * back once a few tries have waited: the run succeeds with each event stored once, and BullMQ
   * counted one attempt only (five cuts used to fail it half-imported).
   */
  async function importThroughOutage(n: number, cut: 'before the run' | 'mid-run'): Promise<void> {
    const created = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(ndjsonEvents(n, cut === 'before the run' ? 0 : 1_000_000)),
    });
    expect(created.status).toBe(202);
    const { results } = (await created.json()) as { results: { id: string; job_id: string } };
    const before = await countEvents(db, p.id);
    const run = async () => {
      const r = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/${results.id}`, { headers: { authorization: p.basic } });
      return ((await r.json()) as { results: { status: string; records_done?: number } }).results;
    };

    /** The job's waits so far (its log says each one was not counted). */
    const waits = async () => {
      const { logs } = await app.queues.queues['batch-import'].getJobLogs(results.job_id);
      return logs.filter((l) => l.includes('not counted as an attempt')).length;
    };

    let worker: InProcessWorker | undefined;
    try {
      if (cut === 'before the run') {
        await proxy.down();
        worker = await startInProcessWorker(db, app.config, { queueNames: ['batch-import'] });
      } else {
        worker = await startInProcessWorker(db, app.config, { queueNames: ['batch-import'] });
        await until(async () => ((await run()).records_done ?? 0) > 0, 30_000, 20);
        await proxy.down();
        // A first cut, waited out; back for a moment, then cut again once the run moved on.
        await until(async () => (await waits()) >= 1, 30_000, 50);
        await proxy.up();
        const resumedFrom = (await run()).records_done ?? 0;
        const moved = await until(async () => {
          const r = await run();
          return r.status === 'succeeded' || (r.records_done ?? 0) > resumedFrom ? r : undefined;
        }, 30_000, 20);
        if (moved.status !== 'succeeded') await proxy.down();
      }
      // Several tries meet the outage; each waits (delayed), none uses an attempt.
      await until(async () => (await waits()) >= 3, 30_000, 100);
      expect((await app.queues.getJob('batch-import', results.job_id))!.attemptsMade).toBe(0);

      await proxy.up();
      const done = await until(async () => {
        const r = await run();
        return ['succeeded', 'failed'].includes(r.status) ? r : undefined;
      }, 60_000, 200);
      expect(done.status).toBe('succeeded');
      expect(await countEvents(db, p.id)).toBe(before + n);
      const finished = await app.queues.getJob('batch-import', results.job_id);
      // The one attempt that completed is the only one BullMQ counted.
      expect(finished?.attemptsMade).toBe(1);
      expect(finished?.failedReason ?? null).toBeNull();
    } finally {
      await proxy.up();
      await worker?.close();
    }
  }

  it('a batch import meeting the outage waits it out without using an attempt, then stores each event once', async () => {
    await importThroughOutage(3000, 'before the run');
  }, 120_000);

  it('the store going away in the middle of a batch import: the run waits, resumes and stores each event once', async () => {
    await importThroughOutage(100_000, 'mid-run');
  }, 120_000);
});

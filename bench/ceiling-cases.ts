/**
 * The ceiling of `/import` on this machine: a bare HTTP server that does only what any `/import`
 * must — take the body, gunzip and parse it on one worker thread, land its rows in the store the
 * way the store's floor does, answer 200 after the commit — with no validation, authentication,
 * logging, rate limit, dedupe of links or usage count. Driven by the same outside clients as the
 * service (ingest-client.ts) and compared with the same floor, it bounds the ratio any service
 * meeting the contract can reach with this request shape on these cores.
 */
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createClient } from '@clickhouse/client';
import { startModuleWorker } from '../src/lib/worker-thread.js';
import { INSERT_COLUMNS } from '../src/store/clickhouse/clickhouse-rows.js';
import { parseClickHouseUrl } from '../src/store/clickhouse/clickhouse-url.js';
import type { EventRows } from '../src/store/event-rows.js';
import { openBenchStore } from './bench-store.js';
import type { CeilingTask } from './ceiling.worker.js';
import { scratchClickHouse } from './clickhouse-cases.js';
import { runClientProcess } from './client-process.js';
import { COLUMNS, type StoreKind } from './floors.js';
import { runIsolated } from './isolated.js';

export interface CeilingArgs {
  kind: StoreKind;
  n: number;
  /** SQLite: a fresh file; PostgreSQL, ClickHouse: the server URL. */
  target: string;
  clients: number;
  batch: number;
}

export interface CeilingResult {
  events: number;
  seconds: number;
  stored: number;
}

/** How a store lands one parsed request (answering when it is committed), and counts at the end. */
interface Lander {
  projectId: number;
  land: (prepared: { rows?: EventRows; bytes?: Uint8Array }) => Promise<void>;
  count: () => Promise<number>;
  close: () => Promise<void>;
}

/** SQLite: one writer; requests waiting when it is free go into one transaction, as the service's combiner does. */
async function sqliteLander(file: string): Promise<Lander> {
  const o = await openBenchStore('sqlite', file);
  const conn = (await o.db.client.acquireConnection()) as Database.Database;
  const insert = conn.prepare(`INSERT INTO events (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`);
  const write = conn.transaction((groups: EventRows[], now: number) => {
    for (const r of groups) {
      for (let i = 0; i < r.event.length; i++) insert.run(o.projectId, r.event[i], r.distinctId[i], r.time[i], r.insertId[i], r.properties[i], 'import', now, r.deviceId[i]);
    }
  });
  let waiting: { rows: EventRows; done: () => void }[] = [];
  let scheduled = false;
  const drain = () => {
    scheduled = false;
    const group = waiting;
    waiting = [];
    write(group.map((g) => g.rows), Date.now());
    for (const g of group) g.done();
  };
  return {
    projectId: o.projectId,
    land: ({ rows }) =>
      new Promise((resolve) => {
        waiting.push({ rows: rows!, done: resolve });
        if (!scheduled) {
          scheduled = true;
          setImmediate(drain);
        }
      }),
    count: async () => (conn.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n,
    close: async () => {
      await o.db.client.releaseConnection(conn);
      await o.close();
    },
  };
}

/** PostgreSQL: each request one COPY on a connection of its own (one per client), as the floor lands its chunks. */
async function postgresLander(serverUrl: string, connections: number): Promise<Lander> {
  const o = await openBenchStore('postgres', serverUrl);
  const idle = Array.from({ length: connections }, () => new pg.Client({ connectionString: o.url }));
  await Promise.all(idle.map((c) => c.connect()));
  const all = [...idle];
  return {
    projectId: o.projectId,
    land: async ({ bytes }) => {
      const c = idle.pop()!;
      try {
        await pipeline(Readable.from([bytes!]), c.query(copyFrom(`COPY events (${COLUMNS.join(', ')}) FROM STDIN`)));
      } finally {
        idle.push(c);
      }
    },
    count: async () => Number((await all[0]!.query('SELECT count(*) AS n FROM events')).rows[0].n),
    close: async () => {
      await Promise.all(all.map((c) => c.end()));
      await o.close();
    },
  };
}

/** ClickHouse: each request one RowBinary INSERT, as the floor's (with the request's rows). */
async function clickhouseLander(serverUrl: string, connections: number): Promise<Lander> {
  const scratch = await scratchClickHouse(serverUrl);
  const t = parseClickHouseUrl(scratch.url);
  const client = createClient({ url: t.url, username: t.username, password: t.password, database: t.database, max_open_connections: connections });
  return {
    projectId: 1,
    land: async ({ bytes }) => {
      const result = await client.exec({ query: `INSERT INTO events (${INSERT_COLUMNS.join(', ')}) FORMAT RowBinary`, values: Readable.from([bytes!]) });
      await pipeline(result.stream, new Writable({ write: (_c, _e, done) => done() }));
    },
    count: async () => {
      const res = await client.query({ query: 'SELECT count() AS n FROM events', format: 'JSONEachRow' });
      return Number(((await res.json()) as { n: string }[])[0]!.n);
    },
    close: async () => {
      await client.close();
      await scratch.drop();
    },
  };
}

/** Whether `bytes` is its buffer's only view (transferring a pooled buffer would take its neighbours along). */
export function ownsBuffer(bytes: Uint8Array): boolean {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
}

function body(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Run isolated (runIsolated, as `web`): the server in this process, the clients in their own. */
export async function ceilingImport(args: CeilingArgs): Promise<CeilingResult> {
  const lander =
    args.kind === 'sqlite' ? await sqliteLander(args.target) : args.kind === 'postgres' ? await postgresLander(args.target, args.clients) : await clickhouseLander(args.target, args.clients);
  const worker: Worker = startModuleWorker(import.meta.url, 'ceiling.worker');
  const parsed = new Map<number, (m: { rows?: EventRows; bytes?: Uint8Array }) => void>();
  worker.on('message', (m: { id: number; rows?: EventRows; bytes?: Uint8Array }) => {
    parsed.get(m.id)!(m);
    parsed.delete(m.id);
  });
  let nextId = 0;
  const now = Date.now();
  const server = http.createServer((req, res) => {
    void (async () => {
      const bytes = await body(req);
      const id = nextId++;
      const prepared = await new Promise<{ rows?: EventRows; bytes?: Uint8Array }>((resolve) => {
        parsed.set(id, resolve);
        const task: CeilingTask = { id, body: bytes, kind: args.kind, projectId: lander.projectId, now };
        worker.postMessage(task, ownsBuffer(bytes) ? [bytes.buffer as ArrayBuffer] : []);
      });
      await lander.land(prepared);
      res.setHeader('content-type', 'application/json');
      res.end('{"code":200,"status":"OK"}');
    })().catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as { port: number };
    const out = await runClientProcess<{ seconds: number; failures: number; firstError?: string }>('ingest-client.ts', {
      url: `http://127.0.0.1:${port}/import`,
      authorization: 'none',
      n: args.n,
      batch: args.batch,
      clients: args.clients,
    });
    if (out.failures > 0) throw new Error(`ceiling ${args.kind}: ${out.failures} requests failed: ${out.firstError}`);
    return { events: args.n, seconds: out.seconds, stored: await lander.count() };
  } finally {
    server.closeAllConnections();
    server.close();
    await worker.terminate();
    await lander.close();
  }
}

/** The ceiling's rate (events/s), in a process of its own with the web process's node flags. */
export async function measureCeiling(args: CeilingArgs): Promise<number> {
  const { result } = await runIsolated<CeilingResult>(fileURLToPath(import.meta.url), 'ceilingImport', args, { as: 'web' });
  if (result.stored !== args.n) throw new Error(`${args.kind} ceiling: stored ${result.stored} of ${args.n} events`);
  return result.events / result.seconds;
}

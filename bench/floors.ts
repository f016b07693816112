/**
 * One floor per store, shared by every bench: the fastest known way to land a bench's rows (the
 * generated import events, or a sync's or a migration's own rows: floorOfChunks) in that store,
 * measured in the same run as what it is compared with.
 * - SQLite: one prepared INSERT a row in 20k-row transactions (faster than multi-row statements), on the very
 *   connection createDb configures (WAL, synchronous=NORMAL);
 * - PostgreSQL: `COPY … FROM STDIN` straight into the events table (indexes and all), 20k rows a COPY,
 *   one COPY per core side by side;
 * - ClickHouse: `@clickhouse/client` inserts of the same rows as RowBinary bytes encoded before
 *   the clock (handing it objects would encode them inside the timing), 20k a time, two per core
 *   side by side. RowBinary costs the server less than JSONEachRow (docs/performance.md).
 * Rows are built before the clock starts: a floor times the store alone. Where the store takes
 * writes side by side, so does its floor (FLOOR_STREAMS): one COPY at a time leaves a core idle.
 */
import os from 'node:os';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createClient } from '@clickhouse/client';
import { eventsBodyOf, INSERT_COLUMNS } from '../src/store/clickhouse/clickhouse-rows.js';
import { parseClickHouseUrl } from '../src/store/clickhouse/clickhouse-url.js';
import { emptyEventRows, type EventRows } from '../src/store/event-rows.js';
import { openBenchStore } from './bench-store.js';
import { scratchClickHouse } from './clickhouse-cases.js';
import { generateEvents, type BenchEvent } from './ingest-data.js';
import { runIsolated } from './isolated.js';
import { storeServerCpu } from './store-server-cpu.js';

export type StoreKind = 'sqlite' | 'postgres' | 'clickhouse';

export interface FloorArgs {
  kind: StoreKind;
  n: number;
  /** SQLite: a fresh file; Postgres: the server URL (a scratch schema); ClickHouse: the server URL (a scratch database). */
  target: string;
  seed?: number;
  /** Events carry $device_id / $user_id as in the identity bench (ingest-data.ts). */
  identity?: boolean;
}

export interface FloorResult {
  events: number;
  seconds: number;
  stored: number;
  /** The store server's CPU seconds while the rows landed (PostgreSQL, ClickHouse; store-server-cpu.ts). */
  storeCpuSeconds?: number;
}

/**
 * Writes each floor keeps in flight. SQLite has one writer. A PostgreSQL COPY is one backend
 * process, so one per core: on this 2-core machine two COPYs landed 1.3–1.7× the rows of one,
 * four no more than two. A ClickHouse insert parses on one thread and then waits on its part's
 * files, so two per core: 1.3–1.6× one insert, and four ~5 % above two (docs/performance.md,
 * eighteenth session).
 */
const CORES = os.availableParallelism();
export const FLOOR_STREAMS: Record<StoreKind, number> = { sqlite: 1, postgres: CORES, clickhouse: 2 * CORES };

/** How each floor is named in the bench tables. */
export const FLOOR_NAMES: Record<StoreKind, string> = {
  sqlite: 'prepared INSERT, 20k rows/tx',
  postgres: `COPY into the table, ${FLOOR_STREAMS.postgres} at once`,
  clickhouse: `@clickhouse/client, RowBinary bytes encoded beforehand, 20k rows/insert, ${FLOOR_STREAMS.clickhouse} at once`,
};

/** Events per transaction / COPY / insert in every floor. */
export const FLOOR_CHUNK = 20_000;
export const COLUMNS = ['project_id', 'event', 'distinct_id', 'time', 'insert_id', 'properties', 'source', 'ingested_at', 'device_id'];

/** Generated bench events as store rows (what the write path would hand a store). */
export function benchRows(n: number, seed = 42, identity = false): EventRows {
  return rowsOfEvents(generateEvents(n, seed, identity));
}

/** Bench events (as a client posts them) as store rows, with no validation: the floors' and the ceiling's rows. */
export function rowsOfEvents(events: readonly BenchEvent[]): EventRows {
  const rows = emptyEventRows();
  for (const e of events) {
    const { time, distinct_id, $insert_id, ...rest } = e.properties;
    rows.event.push(e.event);
    rows.distinctId.push(distinct_id as string);
    rows.time.push((time as number) * 1000);
    rows.insertId.push($insert_id as string);
    rows.properties.push(JSON.stringify(rest));
    rows.deviceId.push(typeof rest.$device_id === 'string' && !rest.$user_id ? rest.$device_id : null);
  }
  return rows;
}

export async function measureFloor(
  kind: StoreKind,
  n: number,
  target: string,
  identity = false,
): Promise<{ rate: number; peakRssMb: number; storeCpuUsPerEvent?: number }> {
  const args: FloorArgs = { kind, n, target, identity };
  const { result, peakRssMb } = await runIsolated<FloorResult>(fileURLToPath(import.meta.url), 'storeFloor', args, { as: 'web' });
  if (result.stored !== n) throw new Error(`${kind} floor: stored ${result.stored} of ${n} events`);
  const storeCpuUsPerEvent = result.storeCpuSeconds === undefined ? undefined : (result.storeCpuSeconds * 1e6) / result.events;
  return { rate: result.events / result.seconds, peakRssMb, storeCpuUsPerEvent };
}

export async function storeFloor(args: FloorArgs): Promise<FloorResult> {
  const rows = benchRows(args.n, args.seed ?? 42, args.identity);
  return floorOfChunks(args.kind, args.target, () => rowChunks(rows, FLOOR_CHUNK));
}

/** Events `from` to `to` of `rows` (no links: floors land event rows only). */
export function sliceRows(rows: EventRows, from: number, to: number): EventRows {
  return {
    event: rows.event.slice(from, to),
    distinctId: rows.distinctId.slice(from, to),
    time: rows.time.slice(from, to),
    insertId: rows.insertId.slice(from, to),
    properties: rows.properties.slice(from, to),
    deviceId: rows.deviceId.slice(from, to),
    links: [],
  };
}

/** Consecutive slices of `rows`, `size` events each (a floor's transactions / inserts). */
export function* rowChunks(rows: EventRows, size: number): Generator<EventRows> {
  for (let from = 0; from < rows.event.length; from += size) yield sliceRows(rows, from, from + size);
}

/**
 * The store's floor over rows a bench builds itself (a sync's or a migration's own rows): each
 * chunk is one transaction (SQLite), one COPY (PostgreSQL) or one insert (ClickHouse), turned
 * into the store's input untimed; only landing it is timed. Chunks are made lazily, so a floor
 * over a million rows holds one chunk at a time.
 */
export async function floorOfChunks(kind: StoreKind, target: string, chunks: () => Iterable<EventRows>, source = 'import'): Promise<FloorResult> {
  if (kind === 'sqlite') return sqliteFloor(target, chunks, source);
  if (kind === 'postgres') return postgresFloor(target, chunks, source);
  return clickhouseFloor(target, chunks, source);
}

function tuple(rows: EventRows, i: number, projectId: number, source: string, now: number): unknown[] {
  return [projectId, rows.event[i], rows.distinctId[i], rows.time[i], rows.insertId[i], rows.properties[i], source, now, rows.deviceId[i]];
}

async function sqliteFloor(file: string, chunks: () => Iterable<EventRows>, source: string): Promise<FloorResult> {
  const o = await openBenchStore('sqlite', file);
  const conn = (await o.db.client.acquireConnection()) as Database.Database;
  const now = Date.now();
  // One row a statement: with better-sqlite3 this beats 64-row statements (121k vs 95k rows/s
  // here; binding hundreds of parameters costs more than the steps it saves).
  const insert = conn.prepare(`INSERT INTO events (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`);
  const insertChunk = conn.transaction((params: unknown[][]) => {
    for (const p of params) insert.run(p);
  });
  let events = 0;
  let seconds = 0;
  for (const rows of chunks()) {
    const params: unknown[][] = [];
    for (let i = 0; i < rows.event.length; i++) params.push(tuple(rows, i, o.projectId, source, now));
    const t0 = performance.now();
    insertChunk(params);
    seconds += (performance.now() - t0) / 1000;
    events += params.length;
  }
  const stored = (conn.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  await o.db.client.releaseConnection(conn);
  await o.close();
  return { events, seconds, stored };
}

/** COPY's text format: tab-separated, `\N` for null, backslash escapes. */
function copyField(v: unknown): string {
  if (v === null || v === undefined) return '\\N';
  const s = String(v);
  return /[\\\t\n\r]/.test(s) ? s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : s;
}

/** The rows as the body of `COPY events (COLUMNS) FROM STDIN`. */
export function copyTextOf(rows: EventRows, projectId: number, source: string, now: number): Buffer {
  let text = '';
  for (let i = 0; i < rows.event.length; i++) text += `${tuple(rows, i, projectId, source, now).map(copyField).join('\t')}\n`;
  return Buffer.from(text);
}

/** The rows as the RowBinary body of an INSERT into ClickHouse's events (INSERT_COLUMNS). */
export function rowBinaryOf(rows: EventRows, projectId: number, source: string, now: number): Buffer {
  return Buffer.concat(eventsBodyOf(rows, { projectId, source, now, ver: 1, isNew: true }).chunks.chunks());
}

/**
 * Lands chunks `streams` at a time: each round's bodies are encoded untimed, then sent side by
 * side on their own streams and timed until the last is acknowledged. A round holds `streams`
 * chunks, so a floor over a million rows still holds only a few.
 */
async function landInRounds(
  chunks: Iterable<EventRows>,
  streams: number,
  encode: (rows: EventRows) => Buffer,
  land: (body: Buffer, stream: number) => Promise<void>,
  serverCpu?: () => number,
): Promise<{ events: number; seconds: number; storeCpuSeconds?: number }> {
  let events = 0;
  let seconds = 0;
  let cpu = 0;
  const round: Buffer[] = [];
  const flush = async () => {
    const cpu0 = serverCpu?.() ?? 0;
    const t0 = performance.now();
    await Promise.all(round.map((body, stream) => land(body, stream)));
    seconds += (performance.now() - t0) / 1000;
    cpu += (serverCpu?.() ?? 0) - cpu0;
    round.length = 0;
  };
  for (const rows of chunks) {
    round.push(encode(rows));
    events += rows.event.length;
    if (round.length === streams) await flush();
  }
  if (round.length > 0) await flush();
  return { events, seconds, ...(serverCpu ? { storeCpuSeconds: cpu } : {}) };
}

async function postgresFloor(serverUrl: string, chunks: () => Iterable<EventRows>, source: string): Promise<FloorResult> {
  const o = await openBenchStore('postgres', serverUrl);
  const now = Date.now();
  const clients = Array.from({ length: FLOOR_STREAMS.postgres }, () => new pg.Client({ connectionString: o.url }));
  await Promise.all(clients.map((c) => c.connect()));
  const encode = (rows: EventRows) => copyTextOf(rows, o.projectId, source, now);
  const landed = await landInRounds(
    chunks(),
    clients.length,
    encode,
    (body, stream) => pipeline(Readable.from([body]), clients[stream]!.query(copyFrom(`COPY events (${COLUMNS.join(', ')}) FROM STDIN`))),
    storeServerCpu('postgres', serverUrl),
  );
  const stored = Number((await clients[0]!.query('SELECT count(*) AS n FROM events')).rows[0].n);
  await Promise.all(clients.map((c) => c.end()));
  await o.close();
  return { ...landed, stored };
}

async function clickhouseFloor(serverUrl: string, chunks: () => Iterable<EventRows>, source: string): Promise<FloorResult> {
  const scratch = await scratchClickHouse(serverUrl);
  const target = parseClickHouseUrl(scratch.url);
  const streams = FLOOR_STREAMS.clickhouse;
  const client = createClient({ url: target.url, username: target.username, password: target.password, database: target.database, max_open_connections: streams });
  try {
    const now = Date.now();
    // The finished body, encoded before the clock: handing the client objects would encode them
    // on this thread while the clock runs.
    const encode = (rows: EventRows) => rowBinaryOf(rows, 1, source, now);
    const landed = await landInRounds(chunks(), streams, encode, async (body) => {
      const result = await client.exec({ query: `INSERT INTO events (${INSERT_COLUMNS.join(', ')}) FORMAT RowBinary`, values: Readable.from([body]) });
      await pipeline(result.stream, new Writable({ write: (_c, _e, done) => done() }));
    }, storeServerCpu('clickhouse', serverUrl));
    const res = await client.query({ query: 'SELECT count() AS n FROM events', format: 'JSONEachRow' });
    const stored = Number(((await res.json()) as { n: string }[])[0]!.n);
    return { ...landed, stored };
  } finally {
    await client.close();
    await scratch.drop();
  }
}

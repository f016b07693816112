/**
 * PostgreSQL's event insert through COPY. First optimistically: the batch goes as COPY text
 * straight into `events` inside a savepoint, which is the store's floor itself (the bench's
 * fastest way in) and succeeds whenever no key of the batch is stored yet — the first delivery
 * of any data. A key that is already there (a replay, a retry, a duplicate inside the batch)
 * makes COPY fail on `events_dedupe`; the savepoint is rolled back and the batch takes the
 * deduplicating path: COPY into a session-local staging table, then one `INSERT … SELECT … ON
 * CONFLICT DO NOTHING` into `events` in dedupe-key order (concurrent batches sharing keys wait
 * instead of deadlocking). Against the unnest() of text arrays it replaced, the staging path
 * halved the time per batch (pg escapes every array element, quotes of JSON included; COPY text
 * escapes only backslash, tab, newline and carriage return) — measured in docs/performance.md.
 *
 * A COPY straight into `events` takes its keys in batch order, so two writers sharing keys in
 * opposite orders can deadlock; PostgreSQL breaks that after `deadlock_timeout` (1 s by default)
 * by failing one. The loser rolls back its savepoint and goes on: a COPY takes the deduplicating
 * path like any other conflict, the deduplicating insert is tried again.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { DbOrTrx } from '../../db/knex.js';
import type { EventRows } from '../event-rows.js';

// A temporary table lives as long as the session and is private to it; created in a
// transaction that rolls back, it goes with it, hence IF NOT EXISTS on every batch (sent with
// the TRUNCATE in one simple-protocol round trip).
const STAGE = 'CREATE TEMP TABLE IF NOT EXISTS event_stage (event text, distinct_id text, time bigint, insert_id text, properties text, device_id text)';
const COPY = 'COPY event_stage FROM STDIN';
const DIRECT = 'COPY events (event, distinct_id, time, insert_id, properties, device_id, project_id, source, ingested_at) FROM STDIN';
const MOVE =
  'INSERT INTO events (project_id, event, distinct_id, time, insert_id, properties, source, ingested_at, device_id) ' +
  'SELECT $1, event, distinct_id, time, insert_id, properties::jsonb, $2, $3, device_id FROM event_stage ' +
  'ORDER BY insert_id, event, distinct_id, time ON CONFLICT DO NOTHING';

const SPECIAL = /[\\\t\n\r]/;

/** A value in COPY's text format. */
function copyText(v: string | null): string {
  if (v === null) return '\\N';
  return SPECIAL.test(v) ? v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : v;
}

const TAB = 9;
const NEWLINE = 10;
const NONE = -1;

/**
 * Buffers of COPY text whose COPY has completed, kept for the next batches. A fresh buffer per
 * batch (~0.7 MB at 2,000 events) is memory outside V8's heap, and allocating that much of it
 * made V8 collect more often: in 5 alternating service pairs on PostgreSQL, buffers allocated
 * per batch were slower than the joined strings they replaced in every pair (0.86–0.96), reused
 * ones faster in 4 of 5 (median 1.05; docs/performance.md).
 */
const spare: Buffer[] = [];
const MAX_SPARE = 4;
const MAX_SPARE_BYTES = 16 * 1024 * 1024;

/**
 * A buffer of at least `size` bytes that owns its whole memory: a spare one when it is big
 * enough, else a new one — never from node's shared pool (`allocUnsafe` hands out slices of
 * one block for small sizes), since a buffer given back is reused to its end.
 */
function takeBuffer(size: number): Buffer {
  const reused = spare.pop();
  return reused && reused.length >= size ? reused : Buffer.allocUnsafeSlow(size);
}

/**
 * Gives back the buffer under `text` once its COPY has completed: PostgreSQL has then received
 * every byte, so nothing reads it any more. Not after a failed COPY (a socket write may still hold it).
 */
function giveBack(text: Buffer): void {
  const whole = Buffer.from(text.buffer, 0, text.buffer.byteLength);
  if (spare.length < MAX_SPARE && whole.length <= MAX_SPARE_BYTES) spare.push(whole);
}

/**
 * The rows as COPY text, in column order of the staging table; `tail` (already COPY text,
 * starting with a tab) is appended to every line. Written as UTF-8 straight into one buffer: the
 * string joined from per-line template strings it replaces cost ~3.5 µs per event on the web
 * thread (flattening the pieces, then encoding the whole text again on its way to the socket),
 * the buffer ~1.5 µs (micro-measured over the bench's 200k events).
 */
export function copyLines(rows: EventRows, tail = ''): Buffer {
  let size = 0;
  for (let i = 0; i < rows.event.length; i++) {
    size += rows.event[i]!.length + rows.distinctId[i]!.length + rows.insertId[i]!.length + rows.properties[i]!.length + (rows.deviceId[i]?.length ?? 2) + tail.length + 32;
  }
  // UTF-16 length is a guess of the UTF-8 size (exact for ASCII); `put` grows it when wrong.
  let buf = takeBuffer(size);
  let at = 0;
  /** Writes `s`, then the byte `end` unless it is NONE; grows the buffer first when they might not fit (≤ 3 bytes per UTF-16 unit). */
  const put = (s: string, end: number) => {
    if (at + s.length * 3 + 1 > buf.length) {
      const bigger = takeBuffer(Math.max(buf.length * 2, at + s.length * 3 + 1));
      buf.copy(bigger, 0, 0, at);
      buf = bigger;
    }
    at += buf.write(s, at);
    if (end !== NONE) buf[at++] = end;
  };
  for (let i = 0; i < rows.event.length; i++) {
    put(copyText(rows.event[i]!), TAB);
    put(copyText(rows.distinctId[i]!), TAB);
    put(String(Math.trunc(rows.time[i]!)), TAB);
    put(copyText(rows.insertId[i]!), TAB);
    put(copyText(rows.properties[i]!), TAB);
    put(copyText(rows.deviceId[i] ?? null), NONE);
    put(tail, NEWLINE);
  }
  return buf.subarray(0, at);
}

const DEADLOCK = '40P01';

/** PostgreSQL's answer when a COPY straight into `events` met a key: stored, or held by a writer it deadlocked with. */
function isKeyConflict(err: unknown): boolean {
  const e = err as { code?: unknown; constraint?: unknown };
  return (e?.code === '23505' && e.constraint === 'events_dedupe') || e?.code === DEADLOCK;
}

/** How often the deduplicating insert is tried again after losing a deadlock (to a COPY straight into `events`). */
const MOVE_ATTEMPTS = 3;

/**
 * Runs `f` inside a savepoint. When it fails with an error `undo` accepts, the savepoint is
 * rolled back (releasing what `f` inserted, so a writer waiting on it goes on) and the answer is
 * undefined; any other error is thrown.
 */
async function inSavepoint<T>(conn: pg.Client, undo: (err: unknown) => boolean, f: () => Promise<T>): Promise<T | undefined> {
  await conn.query('SAVEPOINT event_write');
  try {
    const out = await f();
    await conn.query('RELEASE SAVEPOINT event_write');
    return out;
  } catch (err) {
    if (!undo(err)) throw err;
    await conn.query('ROLLBACK TO SAVEPOINT event_write');
    return undefined;
  }
}

/** COPY straight into `events` (the floor's own statement); the number copied. */
async function copyStraight(conn: pg.Client, rows: EventRows, projectId: number, source: string, now: number): Promise<number> {
  const copy = conn.query(copyFrom(DIRECT));
  const text = copyLines(rows, `\t${Math.trunc(projectId)}\t${copyText(source)}\t${Math.trunc(now)}`);
  await pipeline(Readable.from([text]), copy);
  giveBack(text);
  return copy.rowCount;
}

/** Staging table, then one insert in key order that skips stored keys; the number inserted. */
async function stageAndMove(conn: pg.Client, rows: EventRows, projectId: number, source: string, now: number): Promise<number> {
  await conn.query(`${STAGE}; TRUNCATE event_stage`);
  const text = copyLines(rows);
  await pipeline(Readable.from([text]), conn.query(copyFrom(COPY)));
  giveBack(text);
  const res = await conn.query(MOVE, [projectId, source, now]);
  return res.rowCount ?? 0;
}

/** Inserts the rows (deduplicating) inside the transaction `trx`; returns how many were new. */
export async function copyEventRows(trx: DbOrTrx, projectId: number, source: string, rows: EventRows, now: number): Promise<number> {
  // Inside a knex transaction this is the transaction's own connection (and release is a no-op).
  const conn = (await trx.client.acquireConnection()) as pg.Client;
  try {
    const copied = await inSavepoint(conn, isKeyConflict, () => copyStraight(conn, rows, projectId, source, now));
    if (copied !== undefined) return copied;
    // The insert in key order cannot deadlock with another in key order, but it can with a COPY
    // straight into `events` (rows in batch order); whichever loses retries once the other goes on.
    for (let attempt = 1; ; attempt++) {
      const lastTry = attempt >= MOVE_ATTEMPTS;
      const moved = await inSavepoint(conn, (err) => !lastTry && (err as { code?: unknown })?.code === DEADLOCK, () => stageAndMove(conn, rows, projectId, source, now));
      if (moved !== undefined) return moved;
    }
  } finally {
    await trx.client.releaseConnection(conn);
  }
}

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
import { Utf8Chunks } from '../../lib/utf8-chunks.js';
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

/**
 * The rows as COPY text, in column order of the staging table; `tail` (already COPY text,
 * starting with a tab) is appended to every line. Written as UTF-8 pieces (lib/utf8-chunks.ts):
 * the per-line template strings joined into one string it replaces cost ~3.5 µs per event on
 * the web thread (flattening them, then encoding the whole text again for the socket), this
 * ~1.5 µs (micro-measured over the bench's 200k events).
 */
function copyLines(rows: EventRows, tail = ''): Utf8Chunks {
  const text = new Utf8Chunks();
  for (let i = 0; i < rows.event.length; i++) {
    text.write(copyText(rows.event[i]!), TAB);
    text.write(copyText(rows.distinctId[i]!), TAB);
    text.write(String(Math.trunc(rows.time[i]!)), TAB);
    text.write(copyText(rows.insertId[i]!), TAB);
    text.write(copyText(rows.properties[i]!), TAB);
    text.write(copyText(rows.deviceId[i] ?? null));
    text.write(tail, NEWLINE);
  }
  return text;
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

/** Runs the COPY statement `sql` with `text` as its data; the number of rows copied. The chunks go back for reuse only once it completed. */
async function copyIn(conn: pg.Client, sql: string, text: Utf8Chunks): Promise<number> {
  const copy = conn.query(copyFrom(sql));
  await pipeline(Readable.from(text.chunks()), copy);
  text.release();
  return copy.rowCount;
}

/** COPY straight into `events` (the floor's own statement); the number copied. */
function copyStraight(conn: pg.Client, rows: EventRows, projectId: number, source: string, now: number): Promise<number> {
  return copyIn(conn, DIRECT, copyLines(rows, `\t${Math.trunc(projectId)}\t${copyText(source)}\t${Math.trunc(now)}`));
}

/** Staging table, then one insert in key order that skips stored keys; the number inserted. */
async function stageAndMove(conn: pg.Client, rows: EventRows, projectId: number, source: string, now: number): Promise<number> {
  await conn.query(`${STAGE}; TRUNCATE event_stage`);
  await copyIn(conn, COPY, copyLines(rows));
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

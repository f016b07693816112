/**
 * Hostile tenant, finding 7: a batch import's single record of 1 GB was buffered whole while the
 * file was split. The splitters now stop as soon as one record passes the cap — fed a generated
 * stream, never a real 1 GB file — and the upload is refused with 413 naming the record's index.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonArraySplitter, LineSplitter, RecordTooLargeError } from '../../src/domain/record-splitters.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

const MB = 1024 * 1024;
const CAP = 1 * MB;
/** What a stream of a 1 GB record would feed before the cap stops it (the test gives up at 64 MB). */
const GIVE_UP = 64 * MB;

/** Pushes `head`, then 64 kB chunks of `filler` until the splitter throws; returns the error and bytes fed. */
function feed(splitter: { push(b: Buffer): Buffer[] }, head: string, filler: number): { err: unknown; fed: number; emitted: number } {
  let fed = 0;
  let emitted = 0;
  const chunk = Buffer.alloc(64 * 1024, filler);
  try {
    emitted += splitter.push(Buffer.from(head)).length;
    fed += head.length;
    while (fed < GIVE_UP) {
      emitted += splitter.push(chunk).length;
      fed += chunk.length;
    }
  } catch (err) {
    return { err, fed, emitted };
  }
  return { err: undefined, fed, emitted };
}

describe('record size cap while splitting (generated streams)', () => {
  it('NDJSON: a never-ending line is refused with its index once it passes the cap', () => {
    const out = feed(new LineSplitter(CAP), '{"event":"a"}\n\n{"event":"b"}\n{"event":"', 0x61);
    expect(out.err).toBeInstanceOf(RecordTooLargeError);
    expect((out.err as RecordTooLargeError).index).toBe(2);
    expect(out.emitted).toBe(2);
    expect(out.fed).toBeLessThan(CAP + 128 * 1024);
  });

  it('JSON array: a never-ending string inside an element is refused with its index', () => {
    const out = feed(new JsonArraySplitter(CAP), '[{"event":"a"}, {"event":"b"}, {"event":"c"}, {"event":"', 0x61);
    expect(out.err).toBeInstanceOf(RecordTooLargeError);
    expect((out.err as RecordTooLargeError).index).toBe(3);
    expect(out.fed).toBeLessThan(CAP + 128 * 1024);
  });

  it('JSON array: a never-ending nested array element is refused too', () => {
    const out = feed(new JsonArraySplitter(CAP), '[{"event":"a"}, [', 0x20);
    expect((out.err as RecordTooLargeError).index).toBe(1);
  });

  it('records at the cap still pass', () => {
    const line = `{"event":"${'x'.repeat(CAP - 20)}"}`;
    expect(new LineSplitter(CAP).push(Buffer.from(`${line}\n`))).toHaveLength(1);
    expect(new JsonArraySplitter(CAP).push(Buffer.from(`[${line}]`))).toHaveLength(1);
  });
});

describe('batch-import upload with a record over the cap', () => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'batch-record-size-'));

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db, { UPLOAD_DIR: uploads, BATCH_IMPORT_MAX_RECORD_BYTES: CAP });
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await app?.queues.queues['batch-import'].obliterate({ force: true });
    await app?.close();
    await t?.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  const post = (body: Buffer, contentType: string) =>
    fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': contentType },
      body: new Uint8Array(body),
    });
  const ev = (i: number) => JSON.stringify({ event: 'e', properties: { time: 1_700_000_000 + i, distinct_id: `u${i}`, $insert_id: `i${i}` } });
  const big = JSON.stringify({ event: 'e', properties: { time: 1_700_000_000, distinct_id: 'x', pad: 'p'.repeat(2 * MB) } });

  it.each([
    ['application/x-ndjson', () => Buffer.from(`${ev(0)}\n${ev(1)}\n${big}\n${ev(3)}\n`)],
    ['application/json', () => Buffer.from(`[${ev(0)},${ev(1)},${big},${ev(3)}]`)],
    ['text/csv', () => Buffer.from(`event,time,distinct_id,pad\ne,1700000000,a,x\ne,1700000001,b,y\ne,1700000002,c,${'p'.repeat(2 * MB)}\n`)],
  ])('%s: 413 naming record 2, nothing queued, no file left', async (type, body) => {
    const res = await post(body(), type);
    expect(res.status).toBe(413);
    const json = (await res.json()) as { status: string; error: string };
    expect(json.status).toBe('error');
    expect(json.error).toMatch(/record 2 is larger than 1048576 bytes/);
    expect(await t.db('batch_imports').where({ project_id: p.id }).count({ n: '*' }).first()).toMatchObject({ n: 0 });
    expect(fs.readdirSync(path.join(uploads, String(p.id)))).toEqual([]);
  });
});

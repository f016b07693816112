/**
 * One body reader for every surface (src/http/request-body.ts): each surface takes identity,
 * gzip and deflate bodies, refuses any other Content-Encoding with 415, and cuts a compression
 * bomb off at its decompressed limit (413) in its own error shape — without buffering it.
 */
import zlib from 'node:zlib';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

const LIMIT = 256 * 1024;

describe('one body reader: encodings and bombs on every surface', () => {
  let t: TestDb;
  let app: TestApp;
  let p: SeededProject;
  let lookupId: number;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'body-reader-'));

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db, { IMPORT_MAX_BYTES: LIMIT, LOOKUP_TABLE_MAX_BYTES: LIMIT, EXPERIMENTS_MAX_BODY_BYTES: LIMIT, BATCH_IMPORT_MAX_BYTES: LIMIT, UPLOAD_DIR: uploads });
    p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/lookup-tables`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'plans' }),
    });
    lookupId = ((await res.json()) as any).results.id;
  });
  afterAll(async () => {
    await app?.queues.queues['batch-import'].obliterate({ force: true });
    await app?.close();
    await t?.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  const now = () => Math.floor(Date.now() / 1000) - 60;
  const surfaces = [
    { name: '/import', path: () => `/import?project_id=${p.id}`, type: 'application/json', body: () => JSON.stringify([{ event: 'e', properties: { time: now(), distinct_id: 'u', $insert_id: `i-${Math.random()}` } }]), ok: 200 },
    { name: '/import ndjson', path: () => `/import?project_id=${p.id}`, type: 'application/x-ndjson', body: () => `${JSON.stringify({ event: 'e', properties: { time: now(), distinct_id: 'u', $insert_id: `n-${Math.random()}` } })}\n`, ok: 200 },
    { name: '/track', path: () => '/track', type: 'application/json', body: () => JSON.stringify([{ event: 'e', properties: { token: p.token, time: now(), distinct_id: 'u' } }]), ok: 200, tokenOnly: true },
    { name: '/engage', path: () => '/engage', type: 'application/json', body: () => JSON.stringify([{ $token: p.token, $distinct_id: 'u', $set: { a: 1 } }]), ok: 200, tokenOnly: true },
    { name: 'app JSON (lookup tables)', path: () => `/api/app/projects/${p.id}/lookup-tables`, type: 'application/json', body: () => JSON.stringify({ name: `t-${Math.random()}` }), ok: 200 },
    { name: 'app JSON (warehouse)', path: () => `/api/app/projects/${p.id}/warehouse-sources`, type: 'application/json', body: () => JSON.stringify({ type: 'nope' }), ok: 400 },
    { name: 'lookup CSV', method: 'PUT', path: () => `/lookup-tables/${lookupId}?project_id=${p.id}`, type: 'text/csv', body: () => 'id,plan\n1,pro\n', ok: 200 },
  ];

  for (const s of surfaces) {
    it(`${s.name}: identity, gzip and deflate are read; br is 415; a bomb is 413`, async () => {
      const send = (body: Buffer | string, encoding?: string) =>
        fetch(`${app.url}${s.path()}`, {
          method: s.method ?? 'POST',
          headers: { ...('tokenOnly' in s ? {} : { authorization: p.basic }), 'content-type': s.type, ...(encoding ? { 'content-encoding': encoding } : {}) },
          body: typeof body === 'string' ? body : new Uint8Array(body),
        });
      for (const [encoding, encode] of [
        [undefined, (b: string) => b],
        ['gzip', (b: string) => zlib.gzipSync(b)],
        ['deflate', (b: string) => zlib.deflateSync(b)],
      ] as const) {
        const res = await send(encode(s.body()), encoding);
        expect(res.status, `${s.name} ${encoding ?? 'identity'}: ${await res.clone().text()}`).toBe(s.ok);
      }
      const br = await send(zlib.brotliCompressSync(s.body()), 'br');
      expect(br.status).toBe(415);
      // 64 MiB of zeros inflating from ~64 kB: cut off at the 256 kB limit.
      const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024));
      const cut = await send(bomb, 'gzip');
      expect(cut.status).toBe(413);
    });
  }

  it('batch-import uploads (stored as sent) take gzip and refuse deflate with 415', async () => {
    const send = (body: Buffer, encoding: string) =>
      fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
        method: 'POST',
        headers: { authorization: p.basic, 'content-type': 'application/x-ndjson', 'content-encoding': encoding },
        body: new Uint8Array(body),
      });
    const line = `${JSON.stringify({ event: 'e', properties: { time: now(), distinct_id: 'u', $insert_id: 'b1' } })}\n`;
    expect((await send(zlib.gzipSync(line), 'gzip')).status).toBe(202);
    expect((await send(zlib.deflateSync(line), 'deflate')).status).toBe(415);
    expect((await send(zlib.brotliCompressSync(line), 'br')).status).toBe(415);
  });
});

/** Listings streamed a page at a time: whole pages joined exactly; a failure mid-way cuts the connection. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJsonPages } from '../../src/http/json-pages.js';
import { silentLogger } from '../../src/lib/logger.js';

async function* pagesOf(pages: unknown[][], failAfter = Infinity): AsyncGenerator<unknown[]> {
  for (let i = 0; i < pages.length; i++) {
    if (i >= failAfter) throw new Error('database went away');
    yield pages[i]!;
  }
}

describe('sendJsonPages', () => {
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    const app = express();
    const big = Array.from({ length: 50 }, (_, p) => Array.from({ length: 200 }, (_, i) => ({ p, i, text: 'x"\u2028'.repeat(20) })));
    app.get('/empty', (_req, res) => sendJsonPages(res, pagesOf([]), silentLogger));
    app.get('/big', (_req, res) => sendJsonPages(res, pagesOf(big), silentLogger));
    app.get('/fails-later', (_req, res) => sendJsonPages(res, pagesOf(big, 3), silentLogger));
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('an empty listing is an empty results array', async () => {
    const res = await fetch(`${url}/empty`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: 'ok', results: [] });
  });

  it('many pages join into one document, in order', async () => {
    const body = (await (await fetch(`${url}/big`)).json()) as { status: string; results: { p: number; i: number }[] };
    expect(body.status).toBe('ok');
    expect(body.results).toHaveLength(10_000);
    expect(body.results.map((r) => r.p * 200 + r.i)).toEqual(Array.from({ length: 10_000 }, (_, k) => k));
  });

  it('a failure after the first page cuts the connection: never a complete-looking partial list', async () => {
    const res = await fetch(`${url}/fails-later`);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});

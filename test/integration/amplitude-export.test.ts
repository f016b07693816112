/**
 * The Amplitude export client and archive reader against the local Export API stand-in: real
 * zips of gzipped NDJSON entries over HTTP, 404/400/401/429/503 behaviours, resume positions.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countArchiveRecords, readArchiveLines, type ReadPosition } from '../../connectors/amplitude/archive-reader.js';
import { AmplitudeCredentialsError, downloadExport, windowOf, type ExportClientOptions } from '../../connectors/amplitude/export-client.js';
import { RetryableError } from '../../src/lib/errors.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';

const dataset = new AmplitudeDataset({ seed: 7, startDay: '2024-03-01', days: 3, totalEvents: 6000, users: 300, emptyDays: ['2024-03-02'] });
const creds = { apiKey: 'amp-key', apiSecret: 'amp-secret' };
const fast = { retries: 3, baseMs: 10, maxMs: 50 };

let standin: AmplitudeStandin;
let dir: string;
const never = new AbortController().signal;

function client(over: Partial<ExportClientOptions> = {}): ExportClientOptions {
  return { baseUrl: standin.url, credentials: creds, retry: fast, ...over };
}

async function allLines(file: string, from?: ReadPosition) {
  const out: { entry: string; line: number; text: string }[] = [];
  for await (const b of readArchiveLines(file, { from, batchLines: 100 })) {
    b.lines.forEach((text, i) => out.push({ entry: b.entry, line: b.firstLine + i, text }));
  }
  return out;
}

beforeAll(async () => {
  standin = await startAmplitudeStandin({ dataset, ...creds, tooLargeDays: ['2024-03-03'], rateLimitFirst: 1, retryAfterSeconds: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'amp-export-'));
});
afterAll(async () => {
  await standin.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('Amplitude export client', () => {
  it('retries a 429, then streams a day to disk as a zip of gzipped NDJSON hour files', async () => {
    const dest = path.join(dir, 'day1.zip');
    const out = await downloadExport(windowOf('2024-03-01'), dest, client(), never);
    expect(out.kind).toBe('archive');
    expect(standin.requests.slice(0, 2).map((r) => r.status)).toEqual([429, 200]);
    expect(standin.requests[0]).toMatchObject({ start: '20240301T00', end: '20240301T23' });
    expect(fs.existsSync(`${dest}.part`)).toBe(false);

    const expected = dataset.eventsForDay('2024-03-01');
    expect(await countArchiveRecords(dest)).toEqual({ entries: 72, records: expected.length }); // 24 hours × 3 files
    const lines = await allLines(dest);
    expect(lines).toHaveLength(expected.length);
    expect(new Set(lines.map((l) => l.entry)).size).toBe(72);
    expect(lines[0]!.entry).toMatch(/^187520\/187520_2024-03-01_0#0\.json\.gz$/);
    expect(lines.map((l) => (JSON.parse(l.text) as { event_time: string }).event_time).sort()).toEqual(expected.map((e) => e.event_time as string).sort());
  });

  it('resumes reading after the entries and lines a checkpoint names, and nowhere else', async () => {
    const dest = path.join(dir, 'day1.zip');
    const all = await allLines(dest);
    const entries = [...new Set(all.map((l) => l.entry))];
    const from = { entriesDone: new Set([entries[0]!, entries[1]!]), entry: entries[2]!, line: 5 };
    const rest = await allLines(dest, from);
    const expected = all.filter((l) => !from.entriesDone.has(l.entry) && !(l.entry === from.entry && l.line < 5));
    expect(rest).toEqual(expected);
  });

  it('answers no-data for a 404 and too-large for a day over the limit; hours of that day work', async () => {
    expect(await downloadExport(windowOf('2024-03-02'), path.join(dir, 'd2.zip'), client(), never)).toEqual({ kind: 'no-data' });
    const big = await downloadExport(windowOf('2024-03-03'), path.join(dir, 'd3.zip'), client(), never);
    expect(big.kind).toBe('too-large');
    let total = 0;
    for (let h = 0; h < 24; h++) {
      const out = await downloadExport(windowOf('2024-03-03', h), path.join(dir, `d3-${h}.zip`), client(), never);
      if (out.kind === 'archive') total += (await countArchiveRecords(out.path)).records;
    }
    expect(total).toBe(dataset.countForDay('2024-03-03'));
    expect(standin.requests.filter((r) => r.start.startsWith('20240303T') && r.start === r.end)).toHaveLength(24);
  });

  it('fails with the credentials message on 401, without retrying', async () => {
    const before = standin.requests.length;
    const err = await downloadExport(windowOf('2024-03-01'), path.join(dir, 'x.zip'), client({ credentials: { apiKey: 'amp-key', apiSecret: 'wrong' } }), never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AmplitudeCredentialsError);
    expect((err as Error).message).toMatch(/Amplitude rejected the API key and secret \(HTTP 401/);
    expect((err as Error).message).not.toContain('wrong');
    expect(standin.requests.length - before).toBe(1);
  });
});

describe('Amplitude export client on a failing server', () => {
  it('gives up with a RetryableError after its retries, and stops at once when aborted', async () => {
    const flaky = await startAmplitudeStandin({ dataset, ...creds, serverErrorsNext: 100 });
    try {
      const err = await downloadExport(windowOf('2024-03-01'), path.join(dir, 'f.zip'), { baseUrl: flaky.url, credentials: creds, retry: { retries: 2, baseMs: 5, maxMs: 10 } }, never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect((err as Error).message).toMatch(/after 3 attempts \(HTTP 503/);
      expect(flaky.requests.map((r) => r.status)).toEqual([503, 503, 503]);

      const abort = new AbortController();
      const started = Date.now();
      const pending = downloadExport(windowOf('2024-03-01'), path.join(dir, 'g.zip'), { baseUrl: flaky.url, credentials: creds, retry: { retries: 5, baseMs: 60_000, maxMs: 60_000 } }, abort.signal);
      setTimeout(() => abort.abort(new Error('shutdown')), 100);
      await expect(pending).rejects.toThrow('shutdown');
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await flaky.close();
    }
  });
});

/**
 * The migration's decoder thread pool: a window that finds every thread busy waits for one
 * instead of decoding on the writer's thread, and a thread is free again as soon as it has
 * decoded its window — before that window's last batches are written — so the next day decodes
 * while the writer catches up. Real archives from the Amplitude stand-in, real worker threads.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportUrl, windowOf } from '../../connectors/amplitude/export-client.js';
import { DEFAULT_EVENT_LIMITS } from '../../src/domain/event-record.js';
import { DECODE_AHEAD, decodeWindowOffThread } from '../../src/migration/decoder-threads.js';
import type { DecodedBatch, DecodeRequest } from '../../src/migration/window-decoder.js';
import { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { startAmplitudeStandin, type AmplitudeStandin } from '../amplitude-standin/server.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCH = 10;

describe('migration decoder threads', () => {
  let standin: AmplitudeStandin;
  let dataset: AmplitudeDataset;
  let dir: string;
  const files = new Map<string, string>();

  beforeAll(async () => {
    dataset = new AmplitudeDataset({ seed: 7, startDay: DAYS[0]!, days: DAYS.length, totalEvents: 240, users: 20 });
    standin = await startAmplitudeStandin({ dataset, apiKey: 'k', apiSecret: 's' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'decoder-threads-'));
    for (const day of DAYS) {
      const res = await fetch(exportUrl(standin.url, windowOf(day)), { headers: { authorization: `Basic ${Buffer.from('k:s').toString('base64')}` } });
      expect(res.status).toBe(200);
      const file = path.join(dir, `${day}.zip`);
      fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      files.set(day, file);
    }
  });

  afterAll(async () => {
    await standin.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const request = (day: string): DecodeRequest => ({ file: files.get(day)!, migrationId: 'm', entriesDone: [], batchEvents: BATCH, limits: DEFAULT_EVENT_LIMITS });
  const settled = (p: Promise<unknown>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
  /** Records the batches account for: stored events and rejected ones. */
  const records = (batches: DecodedBatch[]) => batches.reduce((n, b) => n + b.rows.event.length + b.rejected, 0);

  it('a window waits for the busy thread, and gets it once the window before is decoded, not written', async () => {
    const signal = new AbortController().signal;
    const first = decodeWindowOffThread(request(DAYS[0]!), signal, 1);
    const firstBatches: DecodedBatch[] = [(await first.next()).value as DecodedBatch];
    // The day has more batches than the thread may decode ahead, so it is still decoding.
    expect(dataset.eventsForDay(DAYS[0]!).length).toBeGreaterThan((DECODE_AHEAD + 2) * BATCH);

    const second = decodeWindowOffThread(request(DAYS[1]!), signal, 1);
    const secondFirst = second.next();
    expect(await settled(secondFirst)).toBe(false);

    // Take the first window's batches one at a time: the second window must start while some of
    // them are still waiting to be taken (its thread finished decoding, the writer had not).
    let startedWithBatchesLeft = false;
    for (;;) {
      const next = await first.next();
      if (next.done) break;
      firstBatches.push(next.value);
      if (!startedWithBatchesLeft && (await settled(secondFirst))) startedWithBatchesLeft = true;
    }
    expect(startedWithBatchesLeft).toBe(true);

    const secondBatches: DecodedBatch[] = [(await secondFirst).value as DecodedBatch];
    for await (const b of second) secondBatches.push(b);
    expect(records(firstBatches)).toBe(dataset.eventsForDay(DAYS[0]!).length);
    expect(records(secondBatches)).toBe(dataset.eventsForDay(DAYS[1]!).length);
    expect(secondBatches.at(-1)!.end).toBe(true);
  });

  it('a waiting window gets a new thread when the busy one is stopped early, and stops at once when aborted', async () => {
    const first = decodeWindowOffThread(request(DAYS[0]!), new AbortController().signal, 1);
    await first.next();
    const waitingAbort = new AbortController();
    const aborted = decodeWindowOffThread(request(DAYS[1]!), waitingAbort.signal, 1);
    const abortedFirst = aborted.next();
    const second = decodeWindowOffThread(request(DAYS[1]!), new AbortController().signal, 1);
    const secondFirst = second.next();
    expect(await settled(abortedFirst)).toBe(false);

    waitingAbort.abort(new Error('shutdown'));
    await expect(abortedFirst).rejects.toThrow(/shutdown/);
    expect(await settled(secondFirst)).toBe(false);

    // The consumer of the first window stops (its day failed): that thread is replaced, and the
    // window still waiting starts on the new one.
    await first.return(undefined);
    const got = await secondFirst;
    expect(got.done).toBe(false);
    const batches = [got.value as DecodedBatch];
    for await (const b of second) batches.push(b);
    expect(records(batches)).toBe(dataset.eventsForDay(DAYS[1]!).length);
  });
});

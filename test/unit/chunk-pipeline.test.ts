/**
 * The batch import's chunk pipeline: the job reads on while a chunk commits, commits stay one at
 * a time in file order, and a stop or a failed commit keeps every later chunk from committing.
 */
import { describe, expect, it } from 'vitest';
import { ChunkPipeline } from '../../jobs/batch-import.chunks.js';
import type { RawChunk } from '../../src/ingest/batch-chunk.js';
import { BATCH_CHUNK_RECORDS, type ReadyChunk } from '../../src/ingest/batch-import.chunk.js';

const prepare = async (raw: RawChunk) => raw as unknown as ReadyChunk;

function fillChunk(p: ChunkPipeline<string>): void {
  while (!p.full) p.addJson(Buffer.from('{}'));
}

function deferred() {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

/** Whether `p` settles within a few turns of the event loop. */
async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  return done;
}

describe('ChunkPipeline', () => {
  it('goes on cutting while a chunk commits, holds at most one committing and one more, and commits in file order', async () => {
    const gate = deferred();
    const committed: number[] = [];
    let running = 0;
    let maxRunning = 0;
    const p = new ChunkPipeline<string>(0, prepare, async (chunk) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      if (chunk.from === 0) await gate.promise;
      committed.push(chunk.from);
      running -= 1;
      return undefined;
    });
    fillChunk(p);
    expect(await settlesSoon(p.cut())).toBe(true); // chunk 0 commits (held) while reading goes on
    fillChunk(p);
    expect(await settlesSoon(p.cut())).toBe(true); // chunk 1 waits behind it
    fillChunk(p);
    const third = p.cut();
    expect(await settlesSoon(third)).toBe(false); // a third waits for chunk 0's commit
    expect(committed).toEqual([]);
    gate.release();
    expect(await third).toBeUndefined();
    p.addJson(Buffer.from('{}'));
    expect(await p.finish()).toBeUndefined();
    expect(committed).toEqual([0, BATCH_CHUNK_RECORDS, 2 * BATCH_CHUNK_RECORDS, 3 * BATCH_CHUNK_RECORDS]);
    expect(maxRunning).toBe(1);
  });

  it('commits nothing after a stop, and answers the stop', async () => {
    const committed: number[] = [];
    const p = new ChunkPipeline<string>(0, prepare, async (chunk) => {
      if (chunk.from === BATCH_CHUNK_RECORDS) return 'interrupted';
      committed.push(chunk.from);
      return undefined;
    });
    const stops: (string | undefined)[] = [];
    for (let i = 0; i < 4; i++) {
      fillChunk(p);
      stops.push(await p.cut());
    }
    stops.push(await p.finish());
    expect(stops).toContain('interrupted');
    expect(stops.at(-1)).toBe('interrupted');
    expect(committed).toEqual([0]);
  });

  it('commits nothing after a failed commit; the failure reaches the job, and settle() waits without throwing', async () => {
    const committed: number[] = [];
    const p = new ChunkPipeline<string>(0, prepare, async (chunk) => {
      if (chunk.from === 0) throw new Error('server gone');
      committed.push(chunk.from);
      return undefined;
    });
    fillChunk(p);
    await p.cut();
    fillChunk(p);
    await p.cut();
    await expect(p.settle()).resolves.toBeUndefined();
    fillChunk(p);
    await expect(p.cut()).rejects.toThrow('server gone');
    expect(committed).toEqual([]);
  });
});

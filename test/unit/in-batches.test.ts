import { describe, expect, it } from 'vitest';
import { inBatches } from '../../src/lib/in-batches.js';

async function* items(n: number, failAfter?: Error): AsyncGenerator<number> {
  for (let i = 1; i <= n; i++) yield i;
  if (failAfter) throw failAfter;
}

async function collect<T>(source: AsyncIterable<T[]>): Promise<{ batches: T[][]; error?: unknown }> {
  const batches: T[][] = [];
  try {
    for await (const b of source) batches.push(b);
  } catch (error) {
    return { batches, error };
  }
  return { batches };
}

describe('inBatches', () => {
  it('cuts the source into arrays of at most size, in order, mapping each item', async () => {
    expect((await collect(inBatches(items(7), 3, { map: (i) => i * 10 }))).batches).toEqual([[10, 20, 30], [40, 50, 60], [70]]);
    expect((await collect(inBatches(items(6), 3))).batches).toEqual([[1, 2, 3], [4, 5, 6]]);
    expect((await collect(inBatches(items(0), 3))).batches).toEqual([]);
  });

  it('on a failing source hands out the partial array first only when keepOnError says so', async () => {
    const boom = new Error('boom');
    expect(await collect(inBatches(items(4, boom), 3))).toEqual({ batches: [[1, 2, 3]], error: boom });
    expect(await collect(inBatches(items(4, boom), 3, { keepOnError: (e) => e === boom }))).toEqual({ batches: [[1, 2, 3], [4]], error: boom });
  });
});

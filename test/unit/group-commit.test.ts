import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/lib/group-commit.js';
import { KeyedMutex } from '../../src/lib/keyed-mutex.js';

describe('GroupCommit', () => {
  it('commits a lone call at once and groups the calls that arrive meanwhile, per key', async () => {
    const groups: string[][] = [];
    const gc = new GroupCommit<string, string>(
      async (key, items) => {
        groups.push([key, ...items]);
        await new Promise((r) => setTimeout(r, 20));
        return items.map((i) => `${i}!`);
      },
      () => 1,
      3,
    );
    const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((x) => gc.submit('p1', x)).concat(gc.submit('p2', 'z')));
    expect(results).toEqual(['a!', 'b!', 'c!', 'd!', 'e!', 'z!']);
    // 'a' alone (nothing was waiting), then b,c,d (capped at 3), then e; p2 independently.
    expect(groups).toEqual([['p1', 'a'], ['p2', 'z'], ['p1', 'b', 'c', 'd'], ['p1', 'e']]);
  });

  it('rejects every call of a failed group, and later calls still commit', async () => {
    let fail = true;
    const gc = new GroupCommit<number, number>(
      async (_key, items) => {
        await new Promise((r) => setTimeout(r, 5));
        if (fail) throw new Error('down');
        return items;
      },
      () => 1,
      10,
    );
    const first = gc.submit('k', 1);
    const grouped = [gc.submit('k', 2), gc.submit('k', 3)];
    await expect(first).rejects.toThrow('down');
    fail = false;
    // 2 and 3 were grouped behind the failed commit and run after it.
    expect(await Promise.all(grouped)).toEqual([2, 3]);
  });
});

describe('KeyedMutex', () => {
  it('runs one at a time per key, in arrival order', async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    const job = (key: string, name: string, ms: number) =>
      m.run(key, async () => {
        log.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        log.push(`end ${name}`);
      });
    await Promise.all([job('a', 'a1', 20), job('a', 'a2', 1), job('b', 'b1', 5)]);
    expect(log.indexOf('end a1')).toBeLessThan(log.indexOf('start a2'));
    expect(log.indexOf('start b1')).toBeLessThan(log.indexOf('end a1'));
  });
});

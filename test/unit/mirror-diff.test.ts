import { describe, expect, it } from 'vitest';
import { claimKeys, classifyRows, nullColumns, rowHash, unsetNames, type SnapshotEntry } from '../../src/domain/mirror-diff.js';

describe('mirror change detection', () => {
  it('hashes content, not column order or driver types; any changed cell changes the hash', () => {
    const row = { id: 1, name: 'a', at: new Date(Date.UTC(2024, 0, 1)), big: 2n ** 60n, tags: { b: 1, a: 2 } };
    expect(rowHash(row)).toBe(rowHash({ tags: { a: 2, b: 1 }, big: 2n ** 60n, at: new Date(Date.UTC(2024, 0, 1)), name: 'a', id: 1 }));
    expect(rowHash(row)).toMatch(/^[0-9a-f]{40}$/);
    expect(rowHash({ ...row, name: 'b' })).not.toBe(rowHash(row));
    expect(rowHash({ ...row, name: null })).not.toBe(rowHash(row));
    expect(rowHash({ ...row, at: new Date(Date.UTC(2024, 0, 1, 0, 0, 1)) })).not.toBe(rowHash(row));
  });

  it('classifies rows as new, changed, the same, or a key this run already saw', () => {
    const known = new Map<string, SnapshotEntry>([
      ['a', { hash: 'h1', seenRun: 'old' }],
      ['b', { hash: 'h2', seenRun: 'old' }],
      ['c', { hash: 'h3', seenRun: 'run' }], // written by an earlier batch of this run
    ]);
    expect(classifyRows(['a', 'b', 'c', 'd', 'd', 'a'], ['h1', 'x', 'h3', 'h4', 'h4', 'h1'], known, 'run')).toEqual([
      'same',
      'update',
      'duplicate',
      'insert',
      'duplicate',
      'duplicate',
    ]);
  });

  it('lets an invalid row take no key: the next row of its key stands, as across a batch boundary', () => {
    const changes = ['insert', 'insert', 'update', 'update', 'same', 'insert'] as const;
    expect(claimKeys(['a', 'a', 'b', 'b', 'b', 'c'], changes, new Set([0, 2]))).toEqual(['insert', 'insert', 'update', 'update', 'duplicate', 'insert']);
    expect(claimKeys(['a', 'a', 'b', 'b', 'b', 'c'], changes, new Set())).toEqual(['insert', 'duplicate', 'update', 'duplicate', 'duplicate', 'insert']);
  });

  it('unsets a changed profile row\'s null columns and what the previous row set that it does not', () => {
    expect(unsetNames(['tier'], { a: 1 }, ['a', 'b', 'tier', 'legacy'])).toEqual(['tier', 'b', 'legacy']);
    expect(unsetNames([], { a: 1 }, undefined)).toEqual([]);
  });

  it('names the null cells of a row but for the mapped columns', () => {
    expect(nullColumns({ id: 'u1', t: null, name: null, tier: 'x', gone: undefined }, new Set(['id', 't']))).toEqual(['name', 'gone']);
  });
});

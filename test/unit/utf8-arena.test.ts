import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Utf8Arena } from '../../src/lib/utf8-arena.js';

describe('Utf8Arena', () => {
  it('returns every string as pushed, across block boundaries and for items larger than a block', () => {
    const arena = new Utf8Arena();
    const items = ['', 'a', 'Zürich ✓ 東京 🎉', 'x'.repeat(1024 * 1024 - 3), 'yz', 'w'.repeat(3 * 1024 * 1024), '', 'end'];
    for (const s of items) arena.push(s);
    expect(arena.length).toBe(items.length);
    expect([...arena]).toEqual(items);
    expect(arena.get(2)).toBe('Zürich ✓ 東京 🎉');
  });

  it('round-trips any list of strings', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' })), (items) => {
        const arena = new Utf8Arena();
        for (const s of items) arena.push(s);
        return JSON.stringify([...arena]) === JSON.stringify(items);
      }),
    );
  });
});

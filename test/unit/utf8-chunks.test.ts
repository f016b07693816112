import { describe, expect, it } from 'vitest';
import { Utf8Chunks } from '../../src/lib/utf8-chunks.js';

const NEWLINE = 10;
const text = (c: Utf8Chunks) => Buffer.concat(c.chunks()).toString('utf8');

describe('Utf8Chunks', () => {
  it('holds exactly what was written, across chunk boundaries, multi-byte text and a piece larger than a chunk', () => {
    const c = new Utf8Chunks();
    let expected = '';
    for (let i = 0; i < 3000; i++) {
      const head = `{"n":${i},`;
      const fields = `"s":${JSON.stringify(`ü漢😀-${i}-`.repeat(1 + (i % 40)))}}`;
      c.write(head);
      c.write(fields, NEWLINE);
      expected += `${head}${fields}\n`;
      if (i % 500 === 0) {
        const line = `{"big":${JSON.stringify('x€'.repeat(700_000))}}\n`;
        c.write(line);
        expected += line;
      }
    }
    expect(c.chunks().length).toBeGreaterThan(3);
    expect(text(c)).toBe(expected);
    expect(c.byteLength).toBe(Buffer.byteLength(expected));
  });

  it('reused chunks carry nothing of what used them before', () => {
    const first = new Utf8Chunks();
    for (let i = 0; i < 5000; i++) first.write(`{"a":${'9'.repeat(400)}}`, NEWLINE);
    first.release();
    expect(first.chunks()).toEqual([]);
    expect(first.byteLength).toBe(0);
    const second = new Utf8Chunks();
    second.write('b\t', 9);
    second.write('{"c":2}\n');
    expect(text(second)).toBe('b\t\t{"c":2}\n');
  });

  it('nothing written: no chunks, no bytes', () => {
    const c = new Utf8Chunks();
    expect(c.chunks()).toEqual([]);
    expect(c.byteLength).toBe(0);
  });
});

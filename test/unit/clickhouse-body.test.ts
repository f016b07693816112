import { describe, expect, it } from 'vitest';
import { JsonLinesBody } from '../../src/store/clickhouse/clickhouse-body.js';

const text = (body: JsonLinesBody) => Buffer.concat(body.chunks()).toString('utf8');

describe('JsonLinesBody', () => {
  it('holds exactly the lines written, across chunk boundaries, multi-byte text and a line larger than a chunk', () => {
    const body = new JsonLinesBody();
    let expected = '';
    for (let i = 0; i < 3000; i++) {
      const head = `{"n":${i},`;
      const fields = `"s":${JSON.stringify(`ü漢😀-${i}-`.repeat(1 + (i % 40)))}}`;
      body.row(head, fields);
      expected += `${head}${fields}\n`;
      if (i % 500 === 0) {
        const line = `{"big":${JSON.stringify('x€'.repeat(700_000))}}\n`;
        body.line(line);
        expected += line;
      }
    }
    expect(body.lines).toBe(3006);
    expect(body.chunks().length).toBeGreaterThan(3);
    expect(text(body)).toBe(expected);
  });

  it('reused chunks carry nothing of the body that used them before', () => {
    const first = new JsonLinesBody();
    for (let i = 0; i < 5000; i++) first.row('{"a":', `${'9'.repeat(400)}}`);
    first.release();
    expect(first.chunks()).toEqual([]);
    const second = new JsonLinesBody();
    second.row('{"b":', '1}');
    second.line('{"c":2}\n');
    expect(text(second)).toBe('{"b":1}\n{"c":2}\n');
  });

  it('an empty body has no chunks', () => {
    expect(new JsonLinesBody().chunks()).toEqual([]);
  });
});

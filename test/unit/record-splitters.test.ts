/**
 * The byte splitters behind batch-import files: any JSON array, cut into chunks at any byte
 * (inside strings, escapes and multi-byte characters included), yields exactly its elements;
 * broken structure is a JsonArrayError, never a wrong split.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonArrayError, JsonArraySplitter, LineSplitter } from '../../src/domain/record-splitters.js';

function cut(buf: Buffer, points: number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % (buf.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let prev = 0;
  for (const p of at) {
    parts.push(buf.subarray(prev, p));
    prev = p;
  }
  parts.push(buf.subarray(prev));
  return parts;
}

function splitArray(parts: Buffer[]): unknown[] {
  const s = new JsonArraySplitter();
  const out: Buffer[] = [];
  for (const p of parts) out.push(...s.push(p));
  out.push(...s.end());
  return out.map((b) => JSON.parse(b.toString('utf8')));
}

describe('JsonArraySplitter', () => {
  it('returns every element of any JSON array, whatever the chunk boundaries', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 8 }), fc.boolean(), (values, points, pretty) => {
        const buf = Buffer.from(pretty ? JSON.stringify(values, null, 2) : JSON.stringify(values));
        // Round trip through JSON first: -0 and the like are normalised by JSON itself.
        expect(splitArray(cut(buf, points))).toEqual(JSON.parse(buf.toString()));
      }),
      { numRuns: 300 },
    );
  });

  it('handles escapes, brackets inside strings, a BOM and multi-byte characters split byte by byte', () => {
    const values = [{ a: 'x\\"]},[{' }, 'é😀\\', [1, [2, { b: '"' }]], null, 3.5, true];
    const buf = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(` \n${JSON.stringify(values)}\n `)]);
    const bytes = Array.from({ length: buf.length }, (_, i) => buf.subarray(i, i + 1));
    expect(splitArray(bytes)).toEqual(values);
  });

  it('refuses what is not one well-formed array', () => {
    for (const text of ['{"a":1}', '[1,2', '[1,,2]', '[1,]', '[{"a":1} {"b":2}]', '[1] x', '[{"a":1}}]', '']) {
      expect(() => splitArray([Buffer.from(text)]), text).toThrow(JsonArrayError);
    }
    expect(splitArray([Buffer.from('  [ ]  ')])).toEqual([]);
  });
});

describe('LineSplitter', () => {
  it('yields non-blank lines across chunk boundaries, with CRLF and a missing final newline', () => {
    const text = '{"a":1}\r\n\n  \n{"b":"é"}\n{"c":3}';
    const buf = Buffer.from(text);
    for (let i = 0; i <= buf.length; i++) {
      const s = new LineSplitter();
      const lines = [...s.push(buf.subarray(0, i)), ...s.push(buf.subarray(i)), ...s.end()].map((b) => b.toString());
      expect(lines).toEqual(['{"a":1}', '{"b":"é"}', '{"c":3}']);
    }
  });
});

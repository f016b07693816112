import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeDataParam, parseJsonRecords, parseNdjsonRecords } from '../../src/domain/payload-text.js';
import { ValidationError } from '../../src/lib/errors.js';

const status = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof ValidationError ? err.status : `not a ValidationError: ${String(err)}`;
  }
  return 'no error';
};

describe('payload text', () => {
  it('JSON: an array as is, one object as one record; anything else 400', () => {
    expect(parseJsonRecords('[{"a":1},2]', 10)).toEqual([{ a: 1 }, 2]);
    expect(parseJsonRecords('\ufeff {"a":1} ', 10)).toEqual([{ a: 1 }]);
    for (const bad of ['', '42', 'null', '"s"', '[1,', '{"a":1}{"b":2}']) expect(status(() => parseJsonRecords(bad, 10))).toBe(400);
    expect(status(() => parseJsonRecords('[1,2,3]', 2))).toBe(400);
  });

  it('NDJSON: one record per non-blank line; names the bad line; counts the limit', () => {
    expect(parseNdjsonRecords('{"a":1}\r\n\n{"b":2}\n', 10)).toEqual([{ a: 1 }, { b: 2 }]);
    expect(() => parseNdjsonRecords('{"a":1}\n{x}\n', 10)).toThrow(/line 2/);
    expect(() => parseNdjsonRecords('1\n2\n3\n', 2)).toThrow(/3 \(the limit is 2\)/);
    expect(status(() => parseNdjsonRecords('\n \n', 10))).toBe(400);
  });

  it('data=: base64 (standard, URL-safe, spaces for +) or plain JSON', () => {
    const value = [{ event: 'e', properties: { s: '>>>???' } }];
    const b64 = Buffer.from(JSON.stringify(value)).toString('base64');
    expect(b64).toMatch(/[+/]/);
    expect(decodeDataParam(b64, 10)).toEqual(value);
    expect(decodeDataParam(b64.replace(/\+/g, ' '), 10)).toEqual(value);
    expect(decodeDataParam(Buffer.from(JSON.stringify(value)).toString('base64url'), 10)).toEqual(value);
    expect(decodeDataParam(JSON.stringify(value[0]), 10)).toEqual(value);
    expect(() => decodeDataParam('not base64!', 10)).toThrow(/neither base64/);
    expect(status(() => decodeDataParam('', 10))).toBe(400);
  });

  it('any text: records or a 400 ValidationError, never another exception', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), fc.base64String()), (text) => {
        for (const fn of [() => parseJsonRecords(text, 5), () => parseNdjsonRecords(text, 5), () => decodeDataParam(text, 5)]) {
          const s = status(fn);
          expect(s === 'no error' || s === 400).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRfc3339, typeCell } from '../../src/domain/csv-typing.js';
import { buildLookupRow, checkHeader } from '../../src/domain/lookup-csv.js';

describe('CSV cell typing', () => {
  it.each([
    ['', 'absent', undefined],
    ['true', 'boolean', true],
    ['FALSE', 'boolean', false],
    ['0', 'number', 0],
    ['-12', 'number', -12],
    ['3.25', 'number', 3.25],
    ['1e3', 'number', 1000],
    ['-2.5E-1', 'number', -0.25],
    ['9007199254740991', 'number', 9007199254740991],
    ['9007199254740993', 'string', '9007199254740993'],
    ['007', 'string', '007'],
    ['+1', 'string', '+1'],
    ['.5', 'string', '.5'],
    ['1,000', 'string', '1,000'],
    [' 42', 'string', ' 42'],
    ['NaN', 'string', 'NaN'],
    ['Infinity', 'string', 'Infinity'],
    ['1e999', 'string', '1e999'],
    ['2024-05-01', 'datetime', '2024-05-01'],
    ['2024-05-01T12:30:00Z', 'datetime', '2024-05-01T12:30:00Z'],
    ['2024-05-01T12:30:00.123+02:00', 'datetime', '2024-05-01T12:30:00.123+02:00'],
    ['2024-13-01', 'string', '2024-13-01'],
    ['2024-05-01T25:00:00Z', 'string', '2024-05-01T25:00:00Z'],
    ['["a","b"]', 'list', ['a', 'b']],
    ['[1, 2.5, true]', 'list', [1, 2.5, true]],
    ['[]', 'list', []],
    ['[draft]', 'string', '[draft]'],
    ['["a",', 'string', '["a",'],
    ['{"a":1}', 'string', '{"a":1}'],
    ['null', 'string', 'null'],
    ['hello, world', 'string', 'hello, world'],
  ])('%j → %s', (cell, type, value) => {
    expect(typeCell(cell)).toEqual({ type, value });
  });

  it('recognises RFC 3339 only for real dates', () => {
    expect(isRfc3339('2024-02-29')).toBe(true);
    expect(isRfc3339('2024-05-01 12:00:00Z')).toBe(true);
    expect(isRfc3339('2024-05-01T12:00:00')).toBe(false); // no zone: not RFC 3339
    expect(isRfc3339('May 1, 2024')).toBe(false);
  });

  it('never throws; numbers round-trip; strings are kept verbatim', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const t = typeCell(s);
        if (t.type === 'string' || t.type === 'datetime') return t.value === s;
        if (t.type === 'number') return Number.isFinite(t.value) && Number(s) === t.value;
        return true;
      }),
      { numRuns: 2000 },
    );
    fc.assert(fc.property(fc.integer(), (n) => typeCell(String(n)).value === n));
    fc.assert(fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
      const t = typeCell(String(n));
      // JS prints some doubles as e.g. "1e-7" or "-0": either typed back exactly or kept as text.
      return t.type === 'number' ? Object.is(t.value, n) || t.value === n : t.type === 'string';
    }));
  });
});

describe('lookup CSV header and rows', () => {
  it('checks the header', () => {
    expect(checkHeader(['id', 'name', 'price'])).toBeUndefined();
    expect(checkHeader([])).toMatch(/CSV is empty/);
    expect(checkHeader(['id', 'name', 'name'])).toMatch(/duplicate header 'name' \(columns 2 and 3\)/);
    expect(checkHeader(['id', ''])).toMatch(/column 2 has no name/);
    expect(checkHeader(['id', '__proto__'])).toMatch(/__proto__/);
  });

  it('builds a row: key from the first column, typed properties, empty cells absent', () => {
    expect(buildLookupRow(['sku', 'name', 'price', 'tags', 'sale', 'note'], ['A-1', 'Anvil', '9.5', '["heavy"]', 'true', ''])).toEqual({
      ok: true,
      key: 'A-1',
      properties: { name: 'Anvil', price: 9.5, tags: ['heavy'], sale: true },
    });
    // The key stays text even when it looks like a number.
    expect(buildLookupRow(['id', 'v'], ['007', '1'])).toEqual({ ok: true, key: '007', properties: { v: 1 } });
    expect(buildLookupRow(['id', 'v'], ['', '1'])).toMatchObject({ ok: false, message: /key .* is empty/ });
    expect(buildLookupRow(['id', 'v'], ['x'])).toMatchObject({ ok: false, message: /1 field\(s\) but the header has 2/ });
    expect(buildLookupRow(['id', 'v'], ['x'.repeat(256), '1'])).toMatchObject({ ok: false, message: /longer than 255/ });
    expect(buildLookupRow(['id', 'v'], ['x', 'a\u0000b'])).toMatchObject({ ok: false, message: /column 'v' contains a NUL/ });
    expect(buildLookupRow(['id', 'v'], ['\ud800', '1'])).toMatchObject({ ok: false, message: /column 'id' .* unpaired/ });
    expect(checkHeader(['id', 'v\u0000'])).toMatch(/NUL/);
  });
});

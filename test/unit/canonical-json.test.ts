import { describe, expect, it } from 'vitest';
import { canonicalJson, isCanonicalAsIs } from '../../src/domain/canonical-json.js';

describe('canonicalJson', () => {
  it('sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[2,{"y":null,"z":1}]},"b":1}');
  });

  it('takes JSON.stringify as it is only where the two agree', () => {
    const cases: [object, boolean][] = [
      [[], true],
      [[1, 'a', null, true, Infinity], true],
      [[1, [2]], false],
      [[{}], false],
      [{}, true],
      [{ a: 1, b: 'x', c: null }, true],
      // Keys out of order are the case that needs the sort.
      [{ b: 1, a: 2 }, false],
      [{ a: { b: 1 } }, false],
      [{ a: 1, skipped: undefined, z: 2 }, true],
    ];
    for (const [value, asIs] of cases) {
      expect(isCanonicalAsIs(value)).toBe(asIs);
      if (asIs) expect(JSON.stringify(value)).toBe(canonicalJson(value));
    }
  });
});

import { describe, expect, it } from 'vitest';
import { KnownLinks } from '../../src/store/known-links.js';

describe('KnownLinks', () => {
  it('filters only devices whose links committed, per project', () => {
    const k = new KnownLinks();
    const links = [
      { deviceId: 'd1', userId: 'u1' },
      { deviceId: 'd2', userId: 'u2' },
    ];
    expect(k.unknown(1, links)).toEqual(links);
    k.committed(1, [links[0]!]);
    expect(k.unknown(1, links)).toEqual([links[1]]);
    // Another user on a known device: still filtered (the first link won for good).
    expect(k.unknown(1, [{ deviceId: 'd1', userId: 'u9' }])).toEqual([]);
    // Another project's device of the same id is not known.
    expect(k.unknown(2, links)).toEqual(links);
  });

  it('starts over when full instead of growing without bound', () => {
    const k = new KnownLinks();
    const many = Array.from({ length: 200_000 }, (_, i) => ({ deviceId: `d${i}`, userId: 'u' }));
    k.committed(1, many);
    expect(k.unknown(1, [many[5]!])).toEqual([]);
    k.committed(1, [{ deviceId: 'x', userId: 'u' }]);
    expect(k.unknown(1, [many[5]!])).toEqual([many[5]]);
  });
});

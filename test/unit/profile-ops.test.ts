import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyProfileOps, formatProfileTime, type ProfileOp, type ProfileState } from '../../src/domain/profile-ops.js';
import { parseProfileUpdate, parseUpdateTime } from '../../src/domain/profile-update.js';

const T = Date.UTC(2024, 0, 1);
const state = (properties: Record<string, unknown>, propertyTimes: Record<string, number> = {}): ProfileState => ({ properties, propertyTimes });
const apply = (s: ProfileState | null, ops: ProfileOp[], time = T) => applyProfileOps(s, ops, { time });
const props = (s: ProfileState | null, ops: ProfileOp[], time = T) => {
  const out = apply(s, ops, time);
  if (!out.ok) throw new Error(out.message);
  return out.state?.properties;
};

describe('profile operators', () => {
  it('$set creates a profile, overwrites values and records per-property times', () => {
    const out = apply(null, [{ op: '$set', values: { plan: 'pro', seats: 3 } }]);
    expect(out).toEqual({ ok: true, state: state({ plan: 'pro', seats: 3 }, { plan: T, seats: T }) });
    expect(props(state({ plan: 'free', other: 1 }), [{ op: '$set', values: { plan: 'pro' } }])).toEqual({ plan: 'pro', other: 1 });
  });

  it('$set is latest-wins: an older $time never overwrites a newer value, an equal or newer one does', () => {
    const s = state({ plan: 'pro' }, { plan: T });
    expect(props(s, [{ op: '$set', values: { plan: 'old', fresh: 1 } }], T - 1)).toEqual({ plan: 'pro', fresh: 1 });
    expect(props(s, [{ op: '$set', values: { plan: 'same-time' } }], T)).toEqual({ plan: 'same-time' });
    expect(props(s, [{ op: '$set', values: { plan: 'new' } }], T + 1)).toEqual({ plan: 'new' });
  });

  it('$set_once fills only absent properties and never overwrites', () => {
    expect(props(state({ first: 'a' }), [{ op: '$set_once', values: { first: 'b', second: 'c' } }])).toEqual({ first: 'a', second: 'c' });
    expect(props(state({ n: null }), [{ op: '$set_once', values: { n: 5 } }])).toEqual({ n: null });
    // A $set_once value carries no time, so any later-applied $set (even an older one) replaces it.
    const once = apply(null, [{ op: '$set_once', values: { ref: 'x' } }]);
    expect(once.ok && once.state?.propertyTimes).toEqual({});
  });

  it('$add adds to numbers, treats a missing property as 0, and rejects a non-number current value', () => {
    expect(props(state({ n: 1.5 }), [{ op: '$add', values: { n: 2, m: -3 } }])).toEqual({ n: 3.5, m: -3 });
    for (const bad of ['7', true, null, [1], { a: 1 }]) {
      const out = apply(state({ n: bad }), [{ op: '$add', values: { n: 1 } }]);
      expect(out.ok).toBe(false);
      expect(!out.ok && out.message).toMatch(/cannot \$add to 'n'/);
    }
    expect(apply(state({ n: Number.MAX_VALUE }), [{ op: '$add', values: { n: Number.MAX_VALUE } }]).ok).toBe(false);
  });

  it('$append appends one value (lists allowed), creates a list, and rejects a non-list', () => {
    expect(props(state({ l: [1] }), [{ op: '$append', values: { l: [2, 3], m: 'x' } }])).toEqual({ l: [1, [2, 3]], m: ['x'] });
    expect(props(state({ l: ['a'] }), [{ op: '$append', values: { l: 'a' } }])).toEqual({ l: ['a', 'a'] });
    expect(apply(state({ l: 'str' }), [{ op: '$append', values: { l: 1 } }]).ok).toBe(false);
  });

  it('$union merges without duplicates (objects by content), creates a list, rejects a non-list', () => {
    expect(props(state({ l: ['a', 'b'] }), [{ op: '$union', values: { l: ['b', 'c', 'c', 'a'] } }])).toEqual({ l: ['a', 'b', 'c'] });
    expect(props(null, [{ op: '$union', values: { l: ['x', 'x'] } }])).toEqual({ l: ['x'] });
    expect(props(state({ l: [{ a: 1, b: 2 }] }), [{ op: '$union', values: { l: [{ b: 2, a: 1 }, 1, '1'] } }])).toEqual({
      l: [{ a: 1, b: 2 }, 1, '1'],
    });
    expect(apply(state({ l: 3 }), [{ op: '$union', values: { l: [1] } }]).ok).toBe(false);
  });

  it('$remove drops every equal item; a missing list is a no-op; a non-list is rejected', () => {
    expect(props(state({ l: ['a', 'b', 'a', 1] }), [{ op: '$remove', values: { l: 'a' } }])).toEqual({ l: ['b', 1] });
    expect(props(state({ l: ['1', 1] }), [{ op: '$remove', values: { l: 1 } }])).toEqual({ l: ['1'] });
    expect(props(state({ x: 1 }), [{ op: '$remove', values: { missing: 'a' } }])).toEqual({ x: 1 });
    expect(apply(state({ l: 'a' }), [{ op: '$remove', values: { l: 'a' } }]).ok).toBe(false);
  });

  it('$unset removes properties latest-wins and leaves a tombstone time against older $set replays', () => {
    const s = state({ a: 1, b: 2 }, { a: T, b: T });
    const out = apply(s, [{ op: '$unset', names: ['a', 'nope'] }], T + 10);
    expect(out).toEqual({ ok: true, state: state({ b: 2 }, { a: T + 10, b: T, nope: T + 10 }) });
    const unset = out.ok ? out.state : null;
    expect(props(unset, [{ op: '$set', values: { a: 'stale' } }], T + 5)).toEqual({ b: 2 });
    expect(props(unset, [{ op: '$set', values: { a: 'fresh' } }], T + 11)).toEqual({ b: 2, a: 'fresh' });
    // An older $unset does not remove a newer value.
    expect(props(s, [{ op: '$unset', names: ['a'] }], T - 1)).toEqual({ a: 1, b: 2 });
  });

  it('$delete removes the profile; updates that leave a new profile empty do not create it', () => {
    expect(apply(state({ a: 1 }), [{ op: '$delete' }])).toEqual({ ok: true, state: null });
    expect(apply(null, [{ op: '$unset', names: ['a'] }])).toEqual({ ok: true, state: null });
    expect(apply(null, [{ op: '$remove', values: { l: 1 } }])).toEqual({ ok: true, state: null });
  });

  it('a rejected operator leaves the input state untouched (never half-applied)', () => {
    const s = state({ n: 'x', keep: 1 }, { keep: T });
    const out = apply(s, [{ op: '$set', values: { keep: 2 } }, { op: '$add', values: { n: 1 } }]);
    expect(out.ok).toBe(false);
    expect(s).toEqual(state({ n: 'x', keep: 1 }, { keep: T }));
  });

  it('maintains $last_seen latest-wins unless $ignore_time', () => {
    const out = applyProfileOps(null, [{ op: '$set', values: { a: 1 } }], { time: T, lastSeen: true });
    expect(out.ok && out.state?.properties).toEqual({ a: 1, $last_seen: '2024-01-01T00:00:00' });
    const later = out.ok ? out.state : null;
    const older = applyProfileOps(later, [{ op: '$set', values: { b: 1 } }], { time: T - 5000, lastSeen: true });
    expect(older.ok && older.state?.properties.$last_seen).toBe('2024-01-01T00:00:00');
    const ignored = applyProfileOps(later, [{ op: '$set', values: { c: 1 } }], { time: T + 5000, lastSeen: true, ignoreTime: true });
    expect(ignored.ok && ignored.state?.properties.$last_seen).toBe('2024-01-01T00:00:00');
    expect(formatProfileTime(Date.UTC(2020, 1, 3, 4, 5, 6, 789))).toBe('2020-02-03T04:05:06');
  });
});

describe('parsing profile updates', () => {
  const now = T;
  it('normalises ids, $time (s, ms, ISO) and keeps operations in sent order', () => {
    const out = parseProfileUpdate({ $token: 'tok', $distinct_id: 42, $time: 1_700_000_000, $add: { n: 1 }, $set: { a: 1 } }, 'user', now);
    expect(out).toEqual({
      ok: true,
      update: {
        key: { kind: 'user', distinctId: '42' },
        time: 1_700_000_000_000,
        ignoreTime: false,
        token: 'tok',
        ops: [
          { op: '$add', values: { n: 1 } },
          { op: '$set', values: { a: 1 } },
        ],
      },
    });
    expect(parseUpdateTime(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(parseUpdateTime('2024-01-01T00:00:00Z')).toBe(T);
    expect(parseUpdateTime('soon')).toBeUndefined();
    const noTime = parseProfileUpdate({ $distinct_id: 'u', $set: {}, $ignore_time: true, $ip: '1.2.3.4', $device_id: 'd' }, 'user', now);
    expect(noTime.ok && noTime.update).toMatchObject({ time: now, ignoreTime: true });
  });

  it.each([
    [null, /JSON object/],
    [{ $set: { a: 1 } }, /'\$distinct_id' is required/],
    [{ $distinct_id: '', $set: {} }, /must not be empty/],
    [{ $distinct_id: 'x'.repeat(256), $set: {} }, /at most 255/],
    [{ $distinct_id: 'u' }, /no operation/],
    [{ $distinct_id: 'u', $set: [1] }, /'\$set' must be a JSON object/],
    [{ $distinct_id: 'u', $add: { n: '1' } }, /'\$add' value of 'n' must be a number/],
    [{ $distinct_id: 'u', $union: { l: 'a' } }, /must be a list/],
    [{ $distinct_id: 'u', $unset: 'a' }, /list of property names/],
    [{ $distinct_id: 'u', $delete: '', $set: { a: 1 } }, /cannot be combined/],
    [{ $distinct_id: 'u', $time: 'later', $set: { a: 1 } }, /'\$time'/],
    [{ $distinct_id: 'u', $set: { '': 1 } }, /must not be empty/],
    [JSON.parse('{"$distinct_id":"u","$set":{"__proto__":{"x":1}}}'), /__proto__/],
    [{ $distinct_id: 'a\u0000b', $set: { a: 1 } }, /NUL/],
    [{ $distinct_id: 'u', $set: { a: 'x\u0000' } }, /'\$set': strings must not contain NUL/],
    [{ $distinct_id: 'u', $union: { l: ['\ud800'] } }, /unpaired/],
    [{ $distinct_id: 'u', $set: { 'k\udc00': 1 } }, /unpaired/],
    [{ $distinct_id: 'u', $set: { deep: JSON.parse('['.repeat(20) + ']'.repeat(20)) } }, /nested more than 16/],
    [{ $distinct_id: 'u', $time: 1e16, $set: { a: 1 } }, /'\$time'/],
  ])('rejects %j with a clear message', (raw, message) => {
    const out = parseProfileUpdate(raw, 'user', now);
    expect(out.ok).toBe(false);
    expect(!out.ok && out.message).toMatch(message);
  });

  it('groups need $group_key and $group_id and refuse $add and $append', () => {
    const ok = parseProfileUpdate({ $group_key: 'company', $group_id: 'Acme', $set: { size: 5 } }, 'group', now);
    expect(ok.ok && ok.update.key).toEqual({ kind: 'group', groupKey: 'company', groupId: 'Acme' });
    expect(parseProfileUpdate({ $group_key: 'company', $set: {} }, 'group', now)).toMatchObject({ ok: false, message: /'\$group_id'/ });
    for (const op of ['$add', '$append']) {
      const out = parseProfileUpdate({ $group_key: 'c', $group_id: 'g', [op]: { n: 1 } }, 'group', now);
      expect(out).toMatchObject({ ok: false, message: new RegExp(`'\\${op}' is not supported on group profiles`) });
    }
  });

  it('any input yields an update or a message, never an exception (and applying never throws)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.constantFrom('user' as const, 'group' as const), (raw, existing, kind) => {
        const out = parseProfileUpdate(raw, kind, now);
        if (!out.ok) return typeof out.message === 'string' && out.message.length > 0;
        const prior = typeof existing === 'object' && existing !== null && !Array.isArray(existing) ? state(existing as Record<string, unknown>) : null;
        const applied = applyProfileOps(prior, out.update.ops, { time: out.update.time, lastSeen: true });
        return applied.ok || applied.message.length > 0;
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('$distinct_id', '$set', '$add', '$union', '$unset', '$time', '$remove'), fc.jsonValue()), (raw) => {
        const out = parseProfileUpdate(raw, 'user', now);
        return out.ok ? out.update.ops.length > 0 : out.message.length > 0;
      }),
      { numRuns: 500 },
    );
  });
});

/** The simplified ID merge rules per record (src/domain/identity.ts) and their place in validation. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_LIMITS, validateEventRecord } from '../../src/domain/event-record.js';
import { deviceOfDistinctId, resolveEventIdentity } from '../../src/domain/identity.js';

const rules = { ...DEFAULT_EVENT_LIMITS, strictTime: false, now: Date.UTC(2026, 10, 1) };
const T = Date.UTC(2026, 9, 1);
const record = (props: Record<string, unknown>) => ({ event: 'e', properties: { time: T, ...props } });

describe('resolveEventIdentity', () => {
  it('$user_id decides the distinct_id; with $device_id it links the device', () => {
    expect(resolveEventIdentity('simplified', 'whatever', { $user_id: 'u1' })).toEqual({ ok: true, identity: { distinctId: 'u1' } });
    expect(resolveEventIdentity('simplified', '', { $user_id: 'u1', $device_id: 'd1' })).toEqual({
      ok: true,
      identity: { distinctId: 'u1', link: { deviceId: 'd1', userId: 'u1' } },
    });
    expect(resolveEventIdentity('simplified', '', { $user_id: 42, $device_id: 7 })).toEqual({
      ok: true,
      identity: { distinctId: '42', link: { deviceId: '7', userId: '42' } },
    });
  });

  it('only $device_id: anonymous, $device:<id> unless the client sent a distinct_id', () => {
    expect(resolveEventIdentity('simplified', '', { $device_id: 'd1' })).toEqual({ ok: true, identity: { distinctId: '$device:d1', deviceId: 'd1' } });
    expect(resolveEventIdentity('simplified', 'anon-7', { $device_id: 'd1' })).toEqual({ ok: true, identity: { distinctId: 'anon-7', deviceId: 'd1' } });
  });

  it('neither: distinct_id as sent; a sent $device:<d> is anonymous on d', () => {
    expect(resolveEventIdentity('simplified', 'u9', {})).toEqual({ ok: true, identity: { distinctId: 'u9' } });
    expect(resolveEventIdentity('simplified', '$device:d3', {})).toEqual({ ok: true, identity: { distinctId: '$device:d3', deviceId: 'd3' } });
    expect(resolveEventIdentity('simplified', '$device:', {})).toEqual({ ok: true, identity: { distinctId: '$device:' } });
    expect(resolveEventIdentity('simplified', '', { $user_id: '', $device_id: null })).toEqual({ ok: true, identity: { distinctId: '' } });
  });

  it('original projects keep distinct_id as sent and make no links', () => {
    expect(resolveEventIdentity('original', 'x', { $user_id: 'u1', $device_id: 'd1' })).toEqual({ ok: true, identity: { distinctId: 'x' } });
  });

  it('refuses a $device:-prefixed $user_id, ids over 255 bytes and non-string ids', () => {
    expect(resolveEventIdentity('simplified', '', { $user_id: '$device:d1' })).toMatchObject({ ok: false, field: 'properties.$user_id' });
    expect(resolveEventIdentity('simplified', '', { $user_id: 'é'.repeat(128) })).toMatchObject({ ok: false, field: 'properties.$user_id', message: expect.stringContaining('255 bytes') });
    expect(resolveEventIdentity('simplified', '', { $user_id: 'é'.repeat(127) })).toMatchObject({ ok: true });
    expect(resolveEventIdentity('simplified', '', { $device_id: 'x'.repeat(256) })).toMatchObject({ ok: false, field: 'properties.$device_id' });
    expect(resolveEventIdentity('simplified', '', { $device_id: 'x'.repeat(255) })).toMatchObject({ ok: true });
    expect(resolveEventIdentity('simplified', '', { $device_id: { a: 1 } })).toMatchObject({ ok: false, field: 'properties.$device_id' });
    expect(resolveEventIdentity('simplified', '', { $user_id: true })).toMatchObject({ ok: false, field: 'properties.$user_id' });
  });

  it('deviceOfDistinctId', () => {
    expect(deviceOfDistinctId('$device:abc')).toBe('abc');
    expect(deviceOfDistinctId('abc')).toBeUndefined();
    expect(deviceOfDistinctId('$device:')).toBeUndefined();
  });
});

describe('validateEventRecord with identity', () => {
  it('a simplified record may omit distinct_id when $user_id or $device_id is there; ids stay in properties as sent', () => {
    const out = validateEventRecord(record({ $device_id: 'd1', $user_id: 'u1', $insert_id: 'i1' }), 0, rules);
    expect(out).toEqual({
      ok: true,
      event: { event: 'e', distinctId: 'u1', time: T, insertId: 'i1', properties: { $device_id: 'd1', $user_id: 'u1' }, link: { deviceId: 'd1', userId: 'u1' } },
    });
    const anon = validateEventRecord(record({ $device_id: 'd1', $insert_id: 'i2' }), 0, rules);
    expect(anon).toMatchObject({ ok: true, event: { distinctId: '$device:d1', deviceId: 'd1' } });
    expect(validateEventRecord(record({}), 0, rules)).toMatchObject({ ok: false, reject: { field: 'properties.distinct_id' } });
  });

  it('the derived insert id uses the stored distinct_id, so a replay dedupes', () => {
    const a = validateEventRecord(record({ $device_id: 'd1' }), 0, rules);
    const b = validateEventRecord(record({ $device_id: 'd1' }), 0, rules);
    expect(a.ok && b.ok && a.event.insertId === b.event.insertId).toBe(true);
  });

  it('original: distinct_id required and kept; no device, no link', () => {
    expect(validateEventRecord(record({ $device_id: 'd1' }), 0, { ...rules, idMerge: 'original' })).toMatchObject({ ok: false, reject: { field: 'properties.distinct_id' } });
    const kept = validateEventRecord(record({ distinct_id: 'x', $device_id: 'd1', $user_id: 'u1' }), 0, { ...rules, idMerge: 'original' });
    expect(kept.ok && kept.event).toEqual({ event: 'e', distinctId: 'x', time: T, insertId: expect.any(String), properties: { $device_id: 'd1', $user_id: 'u1' } });
  });

  it('a bad id is a per-record rejection naming the field', () => {
    expect(validateEventRecord(record({ $user_id: '$device:zz', $insert_id: 'k' }), 3, rules)).toEqual({
      ok: false,
      reject: { index: 3, $insert_id: 'k', field: 'properties.$user_id', message: expect.stringContaining("must not start with '$device:'") },
    });
  });
});

import { describe, expect, it } from 'vitest';
import {
  AMPLITUDE_SOURCE,
  laterSnapshot,
  parseAmplitudeTime,
  transformAmplitudeEvent,
} from '../../src/domain/amplitude-transform.js';
import { deterministicInsertId } from '../../src/domain/insert-id.js';
import { validateEvents } from '../../src/ingest/events.ingest.js';

const opts = { migrationId: 'mig-1' };

/** A record as Amplitude's Export API writes it (trimmed to the fields that matter here). */
const amplitudeRecord = {
  $insert_id: '5f6d7c3a-1b2c-4d5e-8f90-123456789abc',
  amplitude_id: 123456789,
  app: 187520,
  city: 'Berlin',
  country: 'Germany',
  region: 'Berlin',
  device_id: 'C8F9E604-F01A-4BD9-95C6-8E5357DF265D',
  device_model: 'iPhone 15',
  event_id: 7,
  event_properties: { 'Button Name': 'Buy', price: 9.99, nested: { a: 1 } },
  event_time: '2024-01-02 03:04:05.678912',
  event_type: 'Purchase',
  group_properties: { 'company plan': 'enterprise' },
  groups: { company: 'acme' },
  ip_address: '192.0.2.1',
  language: 'German',
  os_name: 'ios',
  os_version: '17.2',
  platform: 'iOS',
  session_id: 1704164645000,
  user_id: 'alice@example.com',
  user_properties: { plan: 'pro', 'Initial Referrer': 'google' },
  uuid: '0f3c1a7e-5b2d-4a19-9e3a-6f1d2c3b4a5e',
  version_name: '3.1.0',
};

describe('parseAmplitudeTime', () => {
  it('reads the export format as UTC and truncates microseconds to milliseconds', () => {
    expect(parseAmplitudeTime('2024-01-02 03:04:05.678912')).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    expect(parseAmplitudeTime('2024-01-02 03:04:05')).toBe(Date.UTC(2024, 0, 2, 3, 4, 5));
    expect(parseAmplitudeTime('2024-01-02 03:04:05.6')).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 600));
    expect(parseAmplitudeTime('2024-01-02T03:04:05.678Z')).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    expect(parseAmplitudeTime('2024-01-02 03:04:05.123456789+00:00')).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 123));
    expect(parseAmplitudeTime(' 2024-02-29 23:59:59.99 ')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 990));
  });

  it('refuses what is not a real UTC time', () => {
    for (const bad of ['2023-02-29 00:00:00', '2024-04-31 00:00:00', '2024-01-02 03:04:05.', '2024-01-02 03:04:05x', '2024-01-02 3:04:05', '2024-01-02 03:04:05.1234567890', '2024-02-30 00:00:00', '2024-13-01 00:00:00', '2024-01-02 24:00:00', '2024-01-02', 'yesterday', 1704164645000, null, '2024-01-02 03:04:05+02:00']) {
      expect(parseAmplitudeTime(bad)).toBeUndefined();
    }
  });
});

describe('transformAmplitudeEvent', () => {
  it('maps an identified event: name, time, ids, properties, provenance and the user snapshot', () => {
    const out = transformAmplitudeEvent(amplitudeRecord, opts);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.record).toEqual({
      event: 'Purchase',
      properties: {
        time: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
        distinct_id: 'alice@example.com',
        $insert_id: '5f6d7c3a-1b2c-4d5e-8f90-123456789abc',
        $user_id: 'alice@example.com',
        $device_id: 'C8F9E604-F01A-4BD9-95C6-8E5357DF265D',
        'Button Name': 'Buy',
        price: 9.99,
        nested: { a: 1 },
        'company plan': 'enterprise',
        company: 'acme',
        $city: 'Berlin',
        $region: 'Berlin',
        $country: 'Germany',
        $os: 'ios',
        $os_version: '17.2',
        $model: 'iPhone 15',
        $platform: 'iOS',
        $language: 'German',
        $app_version_string: '3.1.0',
        $amplitude_id: 123456789,
        $amplitude_session_id: 1704164645000,
        $import: true,
        $source: AMPLITUDE_SOURCE,
        $migration_id: 'mig-1',
      },
    });
    // Not carried: the IP address (Mixpanel geolocates instead of storing it) and Amplitude internals.
    expect(out.record.properties).not.toHaveProperty('ip_address');
    expect(out.user).toEqual({
      distinctId: 'alice@example.com',
      time: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
      properties: { plan: 'pro', 'Initial Referrer': 'google' },
    });
  });

  it('uses $device:<device_id> for anonymous events and makes no profile for them', () => {
    const out = transformAmplitudeEvent({ ...amplitudeRecord, user_id: null }, opts);
    expect(out.ok && out.record.properties.distinct_id).toBe('$device:C8F9E604-F01A-4BD9-95C6-8E5357DF265D');
    expect(out.ok && out.record.properties).not.toHaveProperty('$user_id');
    expect(out.ok && out.user).toBeUndefined();
  });

  it('hashes event name, user ID, event time and amplitude_id when the source insert id is missing or invalid', () => {
    const time = Date.UTC(2024, 0, 2, 3, 4, 5, 678);
    const expected = deterministicInsertId(['Purchase', 'alice@example.com', time, 123456789]);
    const { $insert_id: _drop, ...withoutId } = amplitudeRecord;
    for (const record of [withoutId, { ...amplitudeRecord, $insert_id: 'has_underscores_and_is_far_too_long_for_us_0001' }, { ...amplitudeRecord, $insert_id: 42 }]) {
      const out = transformAmplitudeEvent(record, opts);
      expect(out.ok && out.record.properties.$insert_id).toBe(expected);
    }
    // A device-only event hashes a null user ID.
    const anon = transformAmplitudeEvent({ ...withoutId, user_id: null }, opts);
    expect(anon.ok && anon.record.properties.$insert_id).toBe(deterministicInsertId(['Purchase', null, time, 123456789]));
  });

  it('keeps the dedupe key independent of the migration that reads the record', () => {
    const { $insert_id: _drop, ...withoutId } = amplitudeRecord;
    const a = transformAmplitudeEvent(withoutId, { migrationId: 'first' });
    const b = transformAmplitudeEvent(withoutId, { migrationId: 'second' });
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    const [ea] = validateEvents([a.record]).events;
    const [eb] = validateEvents([b.record]).events;
    expect([ea!.event, ea!.distinctId, ea!.time, ea!.insertId]).toEqual([eb!.event, eb!.distinctId, eb!.time, eb!.insertId]);
    expect(ea!.properties.$migration_id).toBe('first');
  });

  it('lets event properties win over group and context properties, and identity win over everything', () => {
    const out = transformAmplitudeEvent(
      {
        ...amplitudeRecord,
        group_properties: { shared: 'group', company: 'from-group-props' },
        groups: { company: 'acme' },
        event_properties: { shared: 'event', $city: 'event city', distinct_id: 'spoof', time: 1, $user_id: 'spoof', $source: 'spoof', $import: false },
      },
      opts,
    );
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    const p = out.record.properties;
    expect(p.shared).toBe('event');
    expect(p.company).toBe('acme');
    expect(p.$city).toBe('event city');
    expect(p.distinct_id).toBe('alice@example.com');
    expect(p.time).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    expect(p.$user_id).toBe('alice@example.com');
    expect(p.$source).toBe(AMPLITUDE_SOURCE);
    expect(p.$import).toBe(true);
  });

  it('rejects records it cannot place, with the reason', () => {
    const cases: [unknown, RegExp][] = [
      ['not an object', /JSON object/],
      [[1, 2], /JSON object/],
      [{ ...amplitudeRecord, event_type: '' }, /event_type/],
      [{ ...amplitudeRecord, event_type: undefined }, /event_type/],
      [{ ...amplitudeRecord, event_time: '02/01/2024' }, /event_time/],
      [{ ...amplitudeRecord, user_id: null, device_id: null }, /neither/],
      [{ ...amplitudeRecord, user_id: '', device_id: '' }, /neither/],
    ];
    for (const [record, message] of cases) {
      const out = transformAmplitudeEvent(record, opts);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(out.message).toMatch(message);
    }
  });

  it('drops user property names the profile store refuses and makes no snapshot of an empty set', () => {
    const weird = JSON.parse('{"__proto__": {"x": 1}, "": 2, "ok": 3}') as Record<string, unknown>;
    const out = transformAmplitudeEvent({ ...amplitudeRecord, user_properties: weird }, opts);
    expect(out.ok && out.user?.properties).toEqual({ ok: 3 });
    const empty = transformAmplitudeEvent({ ...amplitudeRecord, user_properties: {} }, opts);
    expect(empty.ok && empty.user).toBeUndefined();
  });
});

describe('laterSnapshot', () => {
  it('prefers the later event, and at equal times the same snapshot whichever comes first', () => {
    const a = { distinctId: 'u', time: 2, properties: { plan: 'pro' } };
    const b = { distinctId: 'u', time: 1, properties: { plan: 'free' } };
    expect(laterSnapshot(a, b)).toBe(a);
    expect(laterSnapshot(b, a)).toBe(a);
    const c = { distinctId: 'u', time: 2, properties: { plan: 'enterprise' } };
    expect(laterSnapshot(a, c)).toBe(laterSnapshot(c, a));
  });
});

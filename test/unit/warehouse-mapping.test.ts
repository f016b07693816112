import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deterministicInsertId, isValidInsertId } from '../../src/domain/insert-id.js';
import {
  compileEventMapper,
  compileLookupMapper,
  compileProfileMapper,
  csvField,
  warehouseInsertId,
  type EventMapping,
} from '../../src/domain/warehouse-mapping.js';
import { compareWatermarks, parseDateTime, propertyValue, warehouseTimeMs } from '../../src/domain/warehouse-values.js';

const mapping: EventMapping = {
  eventColumn: 'ev',
  timeColumn: 'ts',
  userColumn: 'uid',
  distinctIdColumn: 'internal',
  deviceColumn: 'dev',
  jsonColumns: ['props', 'more'],
};
const map = compileEventMapper(mapping);
const T = Date.UTC(2024, 0, 2, 3, 4, 5, 678);

describe('event row mapping', () => {
  it('maps the role columns, flattens JSON columns and keeps the other columns as properties', () => {
    const out = map({
      ev: 'Purchase',
      ts: T,
      uid: 'alice',
      internal: null,
      dev: 'dev-1',
      props: '{"color":"red","n":{"deep":true}}',
      more: { size: 3, color: 'blue' },
      price: 12.5,
      note: null,
      big: 2n ** 60n,
    });
    expect(out).toEqual({
      ok: true,
      value: {
        event: 'Purchase',
        properties: {
          price: 12.5,
          big: '1152921504606846976',
          color: 'blue', // later JSON columns win over earlier ones
          n: { deep: true },
          size: 3,
          time: T,
          distinct_id: 'alice',
          $insert_id: warehouseInsertId('Purchase', 'alice', T, undefined),
          $user_id: 'alice',
          $device_id: 'dev-1',
        },
      },
    });
  });

  it('distinct_id: internal id, else user id, else $device:<device id>; none of them is a rejection', () => {
    const base = { ev: 'e', ts: T, props: null, more: null };
    const d = (row: Record<string, unknown>) => {
      const out = map({ ...base, ...row });
      return out.ok ? out.value.properties.distinct_id : out.message;
    };
    expect(d({ internal: 77, uid: 'alice', dev: 'x' })).toBe('77');
    expect(d({ internal: null, uid: 'alice', dev: 'x' })).toBe('alice');
    expect(d({ internal: null, uid: null, dev: 'x' })).toBe('$device:x');
    expect(d({ internal: null, uid: '', dev: null })).toMatch(/no user ID, internal user ID or device ID/);
  });

  it('the deterministic insert id hashes event name, user id, time and internal id only, and fits 36 chars', () => {
    const a = map({ ev: 'e', ts: T, uid: 'u', internal: 5, dev: 'd1', props: null, more: null, x: 1 });
    const b = map({ ev: 'e', ts: T, uid: 'u', internal: 5, dev: 'd2', props: null, more: null, x: 2 });
    const c = map({ ev: 'e', ts: T + 1, uid: 'u', internal: 5, dev: 'd1', props: null, more: null, x: 1 });
    if (!a.ok || !b.ok || !c.ok) throw new Error('mapping failed');
    expect(a.value.properties.$insert_id).toBe(b.value.properties.$insert_id);
    expect(a.value.properties.$insert_id).not.toBe(c.value.properties.$insert_id);
    fc.assert(
      fc.property(fc.string(), fc.option(fc.string()), fc.nat(), fc.option(fc.string()), (e, u, t, i) => {
        const id = warehouseInsertId(e, u ?? undefined, t, i ?? undefined);
        // The one-shot hash is exactly deterministicInsertId over the four parts.
        return isValidInsertId(id) && id === deterministicInsertId([e, u ?? null, t, i ?? null]);
      }),
    );
  });

  it('an insert id column: valid values are kept, invalid ones hashed to a stable valid id, nulls derived', () => {
    const m = compileEventMapper({ eventName: 'fixed', timeColumn: 'ts', userColumn: 'u', insertIdColumn: 'iid', jsonColumns: [] });
    const id = (iid: unknown) => {
      const out = m({ ts: T, u: 'x', iid });
      if (!out.ok) throw new Error(out.message);
      return out.value.properties.$insert_id as string;
    };
    expect(id('abc-123')).toBe('abc-123');
    expect(id(42)).toBe('42');
    const long = 'x'.repeat(40);
    expect(id(long)).toMatch(/^[0-9a-f]{32}$/);
    expect(id(long)).toBe(id(long));
    expect(id(null)).toBe(warehouseInsertId('fixed', 'x', T, undefined));
    const out = m({ ts: T, u: 'x', iid: null });
    expect(out.ok && out.value.event).toBe('fixed');
  });

  it('rejects bad values with the column and a reason, never throws', () => {
    const reason = (row: Record<string, unknown>) => {
      const out = map({ ev: 'e', ts: T, uid: 'u', props: null, more: null, ...row });
      return out.ok ? 'ok' : `${out.field}: ${out.message}`;
    };
    expect(reason({ ev: null })).toMatch(/^ev: event name column 'ev' is null/);
    expect(reason({ ts: null })).toMatch(/^ts: time column 'ts' is null/);
    expect(reason({ ts: 'yesterday' })).toMatch(/^ts: .*not a time/);
    expect(reason({ ts: '1969-12-31 00:00:00' })).toMatch(/before 1970-01-01/);
    expect(reason({ props: '{not json' })).toMatch(/^props: JSON column 'props' does not hold valid JSON/);
    expect(reason({ props: '[1]' })).toMatch(/must hold a JSON object, not an array/);
    expect(reason({ props: '"text"' })).toMatch(/not string/);
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.anything()), (row) => typeof map(row).ok === 'boolean'));
  });

  it('hands times before 1973 to the write path as seconds, so its seconds-or-ms rule keeps their meaning', () => {
    const out = map({ ev: 'e', ts: '1970-06-01 00:00:00', uid: 'u', props: null, more: null });
    expect(out.ok && out.value.properties.time).toBe(Date.UTC(1970, 5, 1) / 1000);
  });
});

describe('warehouse values', () => {
  it('parses SQL and ISO date-times as UTC unless a zone is given', () => {
    expect(parseDateTime('2024-05-01 10:00:00')).toBe(Date.UTC(2024, 4, 1, 10));
    expect(parseDateTime('2024-05-01T10:00:00.123456')).toBe(Date.UTC(2024, 4, 1, 10, 0, 0, 123));
    expect(parseDateTime('2024-05-01 10:00:00+02')).toBe(Date.UTC(2024, 4, 1, 8));
    expect(parseDateTime('2024-05-01T10:00:00-05:30')).toBe(Date.UTC(2024, 4, 1, 15, 30));
    expect(parseDateTime('2024-05-01')).toBe(Date.UTC(2024, 4, 1));
    expect(parseDateTime('2024-02-30 00:00:00')).toBeUndefined();
    expect(parseDateTime('May 1st')).toBeUndefined();
  });

  it('times: numbers by the seconds-or-ms rule, Dates, numeric strings', () => {
    expect(warehouseTimeMs(1714557600)).toBe(1714557600000);
    expect(warehouseTimeMs(1714557600123)).toBe(1714557600123);
    expect(warehouseTimeMs('1714557600')).toBe(1714557600000);
    expect(warehouseTimeMs(new Date(5e11))).toBe(5e11);
    expect(warehouseTimeMs(1714557600n)).toBe(1714557600000);
    expect(warehouseTimeMs(true)).toBeUndefined();
  });

  it('property values are JSON-safe', () => {
    expect(propertyValue(new Date(Date.UTC(2024, 0, 1)))).toBe('2024-01-01T00:00:00.000Z');
    expect(propertyValue(Buffer.from('hi'))).toBe('aGk=');
    expect(propertyValue(Number.NaN)).toBeNull();
    expect(propertyValue(12n)).toBe(12);
  });

  it('watermarks order numbers numerically and date-times by time', () => {
    expect(compareWatermarks(9, 10)).toBeLessThan(0);
    expect(compareWatermarks('2024-05-01 10:00:00.5', '2024-05-01 10:00:00.123456')).toBeGreaterThan(0);
    expect(compareWatermarks('2024-05-01 10:00:00', '2024-05-01 09:59:59+00')).toBeGreaterThan(0);
    expect(compareWatermarks('b', 'a')).toBeGreaterThan(0);
  });
});

describe('profile and lookup row mapping', () => {
  it('user rows become $set with $time; id and time columns are not properties; nulls left out', () => {
    const m = compileProfileMapper({ idColumn: 'user_id', timeColumn: 'updated', jsonColumns: ['traits'] });
    expect(m({ user_id: 'u1', updated: '2024-05-01 00:00:00', name: 'A', gone: null, traits: '{"city":"Oslo"}' })).toEqual({
      ok: true,
      value: { $distinct_id: 'u1', $set: { name: 'A', city: 'Oslo' }, $time: Date.UTC(2024, 4, 1) },
    });
    const out = m({ user_id: null, updated: null, name: 'A', traits: null });
    expect(out.ok).toBe(false);
  });

  it('group rows carry the fixed group key', () => {
    const m = compileProfileMapper({ idColumn: 'cid', groupKey: 'company', timeColumn: 't', jsonColumns: [] });
    expect(m({ cid: 7, t: null, name: 'Acme' })).toEqual({ ok: true, value: { $group_key: 'company', $group_id: '7', $set: { name: 'Acme' } } });
  });

  it('lookup rows are RFC 4180 CSV, key column first', () => {
    const m = compileLookupMapper('k', ['label', 'k', 'n']);
    expect(m.header).toBe('k,label,n');
    expect(m.line({ k: 'a', label: 'x, "y"', n: 1.5 })).toEqual({ ok: true, value: 'a,"x, ""y""",1.5' });
    expect(m.line({ k: null, label: 'x', n: 1 }).ok).toBe(false);
    expect(csvField(null)).toBe('');
    expect(csvField({ a: 1 })).toBe('"{""a"":1}"');
  });
});

import { describe, expect, it } from 'vitest';
import type { NormalizedEvent } from '../../src/domain/event-record.js';
import { propertyColumns } from '../../src/store/clickhouse/clickhouse-properties.js';
import { encodeClickHouseRow, eventFieldsJson, eventFieldsOf, eventLine } from '../../src/store/clickhouse/clickhouse-rows.js';
import { selectEventRows, toEventRows } from '../../src/store/event-rows.js';

const events: NormalizedEvent[] = [
  {
    event: 'Sign "up"',
    distinctId: 'ü\u2028ser\\1',
    time: 1_700_000_000_123,
    insertId: 'id\t1',
    properties: { plan: 'pro', n: 3.5, ok: true, none: null, tags: ['a', 1, null, { b: [2] }], nested: { z: 1, a: '\n' }, emoji: '😀' },
  },
  { event: 'e', distinctId: '$device:d1', time: 1, insertId: 'x', properties: {}, deviceId: 'd1' },
];

describe('ClickHouse row encoding', () => {
  it('the typed columns written as text equal the arrays propertyColumns defines', () => {
    const values: unknown[] = [
      null, true, false, 0, -0, 1e21, -1.5e-7, 98.11, 2 ** 53, '', 'x"y\\z\n', '😀\u2028', [], [null], [1, 'a', true, null, [2], { b: 1, a: [] }],
      {}, { z: 1, a: { y: [1, { c: null }] } }, ['x', ['y', ['z']]],
    ];
    const props: Record<string, unknown>[] = [{}, { skipped: undefined, kept: 1 }, Object.fromEntries(values.map((v, i) => [`k${i}`, v]))];
    for (const v of values) props.push({ only: v, 'k"\\': v });
    for (const p of props) {
      const line = JSON.parse(`{${eventFieldsJson('e', 'd', 1, 'x', null, JSON.stringify(p), p)}`) as Record<string, unknown>;
      expect(JSON.stringify(Object.fromEntries(Object.entries(line).filter(([k]) => k.startsWith('prop_'))))).toBe(JSON.stringify(propertyColumns(p)));
    }
  });

  it('the row encoded on the worker equals the one derived on the writer thread', () => {
    const plain = toEventRows(events);
    const encoded = toEventRows(events, encodeClickHouseRow);
    expect(plain.encoded).toBeUndefined();
    expect(encoded.encoded).toHaveLength(2);
    for (let i = 0; i < events.length; i++) expect(eventFieldsOf(encoded, i)).toBe(eventFieldsOf(plain, i));
    // Picking rows keeps each row's encoding with it.
    expect(eventFieldsOf(selectEventRows(encoded, [1]), 0)).toBe(eventFieldsOf(plain, 1));
  });

  it('a line is the JSONEachRow object the table expects', () => {
    const rows = toEventRows(events, encodeClickHouseRow);
    const line = eventLine(rows, 0, { projectId: 7, source: 'import', now: 42, ver: 9, isNew: true });
    expect(line.endsWith('}\n')).toBe(true);
    expect(JSON.parse(line)).toEqual({
      project_id: 7,
      ver: 9,
      seq: 9,
      is_deleted: 0,
      is_new: 1,
      source: 'import',
      ingested_at: 42,
      event: 'Sign "up"',
      distinct_id: 'ü\u2028ser\\1',
      time: 1_700_000_000_123,
      insert_id: 'id\t1',
      device_id: '',
      properties: rows.properties[0],
      ...propertyColumns(events[0]!.properties),
    });
    expect(JSON.parse(eventLine(rows, 1, { projectId: 7, source: 'import', now: 42, ver: 9, isNew: false }))).toMatchObject({ device_id: 'd1', is_new: 0, prop_keys: [] });
  });
});

import { describe, expect, it } from 'vitest';
import type { NormalizedEvent } from '../../src/domain/event-record.js';
import { propertyColumns } from '../../src/store/clickhouse/clickhouse-properties.js';
import { clickHouseRowEncoder, EventsBody, eventFieldsOf, INSERT_COLUMNS, rowHead, writeEventFields } from '../../src/store/clickhouse/clickhouse-rows.js';
import { RowBinaryWriter } from '../../src/store/clickhouse/row-binary-writer.js';
import { selectEventRows, toEventRows } from '../../src/store/event-rows.js';

/** Reads RowBinary back, as ClickHouse does, to check what the writer wrote. */
class RowBinaryReader {
  private at = 0;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get done(): boolean {
    return this.at === this.bytes.length;
  }
  u8(): number {
    return this.bytes[this.at++]!;
  }
  u64(): number {
    const v = this.view.getUint32(this.at, true) + this.view.getUint32(this.at + 4, true) * 2 ** 32;
    this.at += 8;
    return v;
  }
  i64(): number {
    const v = this.view.getUint32(this.at, true) + this.view.getInt32(this.at + 4, true) * 2 ** 32;
    this.at += 8;
    return v;
  }
  f64(): number {
    const v = this.view.getFloat64(this.at, true);
    this.at += 8;
    return v;
  }
  varUInt(): number {
    let v = 0;
    for (let shift = 1; ; shift *= 128) {
      const b = this.u8();
      v += (b & 0x7f) * shift;
      if (b < 0x80) return v;
    }
  }
  string(): string {
    const n = this.varUInt();
    const s = Buffer.from(this.bytes.subarray(this.at, this.at + n)).toString('utf8');
    this.at += n;
    return s;
  }
  array<T>(one: () => T): T[] {
    return Array.from({ length: this.varUInt() }, one);
  }
}

const COLUMN_READERS: Record<string, (r: RowBinaryReader) => unknown> = {
  project_id: (r) => r.u64(),
  ver: (r) => r.u64(),
  seq: (r) => r.u64(),
  is_deleted: (r) => r.u8(),
  is_new: (r) => r.u8(),
  source: (r) => r.string(),
  ingested_at: (r) => r.i64(),
  event: (r) => r.string(),
  distinct_id: (r) => r.string(),
  time: (r) => r.i64(),
  insert_id: (r) => r.string(),
  device_id: (r) => r.string(),
  properties: (r) => r.string(),
  prop_keys: (r) => r.array(() => r.string()),
  prop_types: (r) => r.array(() => r.u8()),
  prop_nums: (r) => r.array(() => r.f64()),
  prop_strs: (r) => r.array(() => r.string()),
  prop_canon: (r) => r.array(() => r.string()),
  prop_elem_types: (r) => r.array(() => r.array(() => r.u8())),
  prop_elem_nums: (r) => r.array(() => r.array(() => r.f64())),
  prop_elem_strs: (r) => r.array(() => r.array(() => r.string())),
  prop_elem_canon: (r) => r.array(() => r.array(() => r.string())),
};

/** Every row of an INSERT body as an object of INSERT_COLUMNS. */
function readRows(bytes: Uint8Array, columns = INSERT_COLUMNS): Record<string, unknown>[] {
  const r = new RowBinaryReader(bytes);
  const out: Record<string, unknown>[] = [];
  while (!r.done) out.push(Object.fromEntries(columns.map((c) => [c, COLUMN_READERS[c]!(r)])));
  return out;
}

const EVENT_FIELDS = INSERT_COLUMNS.slice(INSERT_COLUMNS.indexOf('event'));

function bodyBytes(body: EventsBody): Uint8Array {
  return Buffer.concat(body.chunks.chunks());
}

const events: NormalizedEvent[] = [
  {
    event: 'Sign "up"',
    distinctId: 'ü\u2028ser\\1',
    time: 1_700_000_000_123,
    insertId: 'id\t1',
    properties: { plan: 'pro', n: 3.5, ok: true, none: null, tags: ['a', 1, null, { b: [2] }], nested: { z: 1, a: '\n' }, emoji: '😀' },
  },
  { event: 'e', distinctId: '$device:d1', time: -86_400_000, insertId: 'x'.repeat(300), properties: {}, deviceId: 'd1' },
];

describe('ClickHouse rows as RowBinary', () => {
  it('the typed columns read back equal the arrays propertyColumns defines', () => {
    const values: unknown[] = [
      null, true, false, 0, -0, 1e21, -1.5e-7, 98.11, 2 ** 53, Infinity, '', 'x"y\\z\n', '😀\u2028', 'é'.repeat(200), [], [null], [-Infinity, 2],
      [1, 'a', true, null, [2], { b: 1, a: [] }], {}, { z: 1, a: { y: [1, { c: null }] } }, ['x', ['y', ['z']]],
    ];
    const props: Record<string, unknown>[] = [{}, { skipped: undefined, kept: 1 }, Object.fromEntries(values.map((v, i) => [`k${i}`, v]))];
    for (const v of values) props.push({ only: v, 'k"\\': v, ['ключ'.repeat(40)]: v });
    for (const p of props) {
      const w = new RowBinaryWriter();
      writeEventFields(w, 'e', 'd', 1, 'x', null, JSON.stringify(p), p);
      const [row] = readRows(w.endRow(), EVENT_FIELDS);
      const expected = propertyColumns(p);
      expect(Object.fromEntries(Object.keys(expected).map((k) => [k, row![k]]))).toEqual(expected);
    }
  });

  it('a number JSON cannot hold is typed as the null its properties text keeps', () => {
    const p = { big: Infinity, list: [-Infinity] };
    const columns = propertyColumns(p);
    expect(JSON.parse(JSON.stringify(p))).toEqual({ big: null, list: [null] });
    expect(columns.prop_types).toEqual([1, 5]);
    expect(columns.prop_elem_types).toEqual([[], [1]]);
  });

  it('the row encoded on the worker equals the one derived on the writer thread', () => {
    const plain = toEventRows(events);
    const encoded = toEventRows(events, clickHouseRowEncoder());
    expect(plain.encoded).toBeUndefined();
    expect(encoded.encoded).toHaveLength(2);
    for (let i = 0; i < events.length; i++) expect(Buffer.from(eventFieldsOf(encoded, i, new RowBinaryWriter()))).toEqual(Buffer.from(eventFieldsOf(plain, i, new RowBinaryWriter())));
    // Picking rows keeps each row's encoding with it.
    expect(Buffer.from(eventFieldsOf(selectEventRows(encoded, [1]), 0, new RowBinaryWriter()))).toEqual(Buffer.from(eventFieldsOf(plain, 1, new RowBinaryWriter())));
  });

  it('a body holds each row as the table expects it, markers included', () => {
    const rows = toEventRows(events, clickHouseRowEncoder());
    const body = new EventsBody();
    body.event(rowHead({ projectId: 7, source: 'import', now: 42, ver: 2 ** 52 + 9, isNew: true }), rows, 0);
    body.event(rowHead({ projectId: 7, source: 'import', now: 42, ver: 9, isNew: false }), toEventRows(events), 1);
    body.deleteMarker(7, { event: 'gone', distinctId: 'u', time: 5, insertId: 'i' }, 10, 43);
    const [first, second, marker] = readRows(bodyBytes(body));
    expect(first).toEqual({
      project_id: 7,
      ver: 2 ** 52 + 9,
      seq: 2 ** 52 + 9,
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
    expect(second).toMatchObject({ device_id: 'd1', is_new: 0, time: -86_400_000, insert_id: 'x'.repeat(300), prop_keys: [] });
    expect(marker).toMatchObject({ is_deleted: 1, ver: 10, event: 'gone', time: 5, properties: '{}', prop_keys: [], ingested_at: 43 });
  });

  it('rows cut by a chunk end move whole to the next chunk, and earlier rows stay intact', () => {
    const w = new RowBinaryWriter(50);
    const written: Uint8Array[] = [];
    for (let i = 0; i < 40; i++) {
      w.string(`row ${i} ${'ü'.repeat(i)}`);
      w.varUInt(2 ** 40 + i);
      w.i64(-i * 1000 - 1);
      written.push(w.endRow());
    }
    written.forEach((bytes, i) => {
      const r = new RowBinaryReader(bytes);
      expect([r.string(), r.varUInt(), r.i64(), r.done]).toEqual([`row ${i} ${'ü'.repeat(i)}`, 2 ** 40 + i, -i * 1000 - 1, true]);
    });
  });
});

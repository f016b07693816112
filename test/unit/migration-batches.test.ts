import { describe, expect, it } from 'vitest';
import { concatEventRows, toEventRows } from '../../src/store/event-rows.js';
import { mergeBatches, type DecodedBatch } from '../../src/migration/window-decoder.js';

const ev = (i: number, device?: string, user?: string) => ({
  event: 'e',
  distinctId: user ?? `u${i}`,
  time: 1000 + i,
  insertId: `id-${i}`,
  properties: { i },
  ...(device && user ? { link: { deviceId: device, userId: user } } : {}),
});

function batch(first: number, n: number, over: Partial<DecodedBatch> = {}): DecodedBatch {
  const events = Array.from({ length: n }, (_, k) => ev(first + k));
  return { rows: toEventRows(events), staged: [], read: n, rejected: 0, samples: [], entriesDone: [], end: false, ...over };
}

describe('mergeBatches: every ready batch of a window as one commit', () => {
  it('keeps rows in order, sums the counts and takes the position after the last batch', () => {
    const a = batch(0, 3, { read: 4, rejected: 1, samples: [{ entry: 'x#0', line: 2, message: 'bad' }], entry: 'x#0', line: 4 });
    const b = batch(3, 2, { read: 2, entriesDone: ['x#0'], entry: undefined, line: undefined, end: true });
    const m = mergeBatches([a, b]);
    expect(m.rows.insertId).toEqual(['id-0', 'id-1', 'id-2', 'id-3', 'id-4']);
    expect(m.rows.properties).toEqual(['{"i":0}', '{"i":1}', '{"i":2}', '{"i":3}', '{"i":4}']);
    expect(m.rows.time).toEqual([1000, 1001, 1002, 1003, 1004]);
    expect([m.read, m.rejected, m.samples.length]).toEqual([6, 1, 1]);
    expect([m.entriesDone, m.entry, m.line, m.end]).toEqual([['x#0'], undefined, undefined, true]);
  });

  it("stages one snapshot per user: the later one, at equal times the larger JSON, as the staging table decides", () => {
    const a = batch(0, 1, { staged: [{ distinctId: 'ann', time: 5, properties: '{"p":"b"}' }, { distinctId: 'bob', time: 9, properties: '{"p":1}' }] });
    const b = batch(1, 1, { staged: [{ distinctId: 'ann', time: 5, properties: '{"p":"a"}' }, { distinctId: 'bob', time: 10, properties: '{"p":0}' }] });
    const c = batch(2, 1, { staged: [{ distinctId: 'ann', time: 5, properties: '{"p":"c"}' }] });
    const staged = mergeBatches([a, b, c]).staged.sort((x, y) => x.distinctId.localeCompare(y.distinctId));
    expect(staged).toEqual([
      { distinctId: 'ann', time: 5, properties: '{"p":"c"}' },
      { distinctId: 'bob', time: 10, properties: '{"p":0}' },
    ]);
  });

  it("keeps only each device's first link across the batches", () => {
    const a = toEventRows([ev(0, 'd1', 'ann'), ev(1, 'd2', 'bob')]);
    const b = toEventRows([ev(2, 'd1', 'carl'), ev(3, 'd3', 'dan')]);
    expect(concatEventRows([a, b]).links).toEqual([
      { deviceId: 'd1', userId: 'ann' },
      { deviceId: 'd2', userId: 'bob' },
      { deviceId: 'd3', userId: 'dan' },
    ]);
  });
});

/**
 * How a ClickHouse report is cut into time slices and when it reads a hot property's column.
 * The answers themselves are checked against the reference on real servers by the store
 * contract suite (test/store/), which runs every report sliced and with some hot properties.
 */
import { describe, expect, it } from 'vitest';
import { parseExpression } from '../../src/domain/where-expression.js';
import { hotColumnName, parseHotProperties, DEFAULT_HOT_PROPERTIES } from '../../src/store/clickhouse/clickhouse-hot-properties.js';
import { reportSql, sliceBounds, sliceProbeSql } from '../../src/store/clickhouse/clickhouse-reads.js';

const range = { projectId: 3, fromMs: 1000, toMs: 5000 };

describe('ClickHouse report time slices', () => {
  it('asks for the quantiles between the slices', () => {
    expect(sliceProbeSql(range, 4)).toContain('quantiles(0.2500, 0.5000, 0.7500)(time)');
    expect(sliceProbeSql(range, 2)).toContain('quantiles(0.5000)(time)');
  });

  it('keeps bounds whole, strictly inside the range, ascending and distinct', () => {
    expect(sliceBounds(range, [2000.4, 2000.6, 2001.2, 4999.6, 6000])).toEqual([2000, 2001]);
    expect(sliceBounds(range, [1000, 999])).toEqual([]);
    expect(sliceBounds(range, [3000, 2000])).toEqual([3000]);
  });

  it('covers the range once: one FINAL per slice, each boundary in exactly one slice', () => {
    const sql = reportSql({ ...range, unit: 'day', type: 'general' }, { sliceBounds: [2000, 3000] });
    const finals = sql.split(' UNION ALL ');
    expect(finals).toHaveLength(3);
    expect(finals[0]).toMatch(/FINAL WHERE .*time < 2000\)?/);
    expect(finals[0]).not.toMatch(/time >= 2000/);
    expect(finals[1]).toMatch(/time >= 2000 AND time < 3000/);
    expect(finals[2]).toMatch(/time >= 3000/);
    expect(finals[2]).not.toMatch(/time < 3000/);
    expect(reportSql({ ...range, unit: 'day', type: 'general' })).not.toContain('UNION ALL');
  });
});

describe('ClickHouse hot properties', () => {
  it('segments by the column instead of the property arrays when there is one', () => {
    const q = { ...range, unit: 'day' as const, type: 'general' as const, on: parseExpression('properties["$browser"]') };
    const hot = reportSql(q, { segmentColumn: hotColumnName('$browser') });
    expect(hot).toContain(`arrayJoin(${hotColumnName('$browser')})`);
    expect(hot).not.toContain('prop_keys');
    expect(reportSql(q)).toContain('prop_keys');
    // A where on properties still reads the arrays it needs.
    expect(reportSql({ ...q, where: parseExpression('properties["n"] > 1') }, { segmentColumn: hotColumnName('$browser') })).toContain('prop_keys');
  });

  it('names columns readably and distinctly; parses the list; refuses the event columns', () => {
    expect(hotColumnName('$browser')).toMatch(/^seg__browser_[0-9a-f]{8}$/);
    expect(hotColumnName('a b')).not.toBe(hotColumnName('a_b'));
    expect(parseHotProperties(undefined)).toEqual(DEFAULT_HOT_PROPERTIES);
    expect(parseHotProperties('')).toEqual([]);
    expect(parseHotProperties(' a, b ,a,')).toEqual(['a', 'b']);
    expect(() => parseHotProperties('a,distinct_id')).toThrow(/distinct_id is a column/);
  });
});

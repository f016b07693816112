import { describe, expect, it } from 'vitest';
import { float, ident, int, str } from '../../src/store/clickhouse/clickhouse-sql.js';
import { parseClickHouseUrl, withDatabase } from '../../src/store/clickhouse/clickhouse-url.js';

describe('ClickHouse literals (no server-side parameters on 18.16)', () => {
  it('escapes quotes and backslashes in strings', () => {
    expect(str("it's")).toBe("'it\\'s'");
    expect(str('a\\b')).toBe("'a\\\\b'");
    expect(str("\\' OR 1=1 --")).toBe("'\\\\\\' OR 1=1 --'");
  });
  it('refuses non-integers and odd identifiers; writes non-finite floats as 18.16 reads them', () => {
    expect(int(42)).toBe('42');
    expect(() => int(1.5)).toThrow();
    expect(() => int(2 ** 60)).toThrow();
    expect(float(1.5)).toBe('toFloat64(1.5)');
    expect(float(NaN)).toBe("toFloat64('nan')");
    expect(float(-Infinity)).toBe("toFloat64('-inf')");
    expect(ident('test_abc')).toBe('test_abc');
    expect(() => ident('x; DROP TABLE y')).toThrow();
  });
});

describe('EVENT_STORE_URL', () => {
  it('parses clickhouse:// and clickhouses:// URLs', () => {
    expect(parseClickHouseUrl('clickhouse://u:p%40ss@db.example:8123/analytics')).toEqual({ url: 'http://db.example:8123', username: 'u', password: 'p@ss', database: 'analytics' });
    expect(parseClickHouseUrl('clickhouses://h/')).toEqual({ url: 'https://h:8443', username: 'default', password: '', database: 'default' });
    expect(() => parseClickHouseUrl('http://h:8123/x')).toThrow(/scheme/);
    expect(() => parseClickHouseUrl('clickhouse://h/bad-name')).toThrow(/database name/);
    expect(parseClickHouseUrl(withDatabase('clickhouse://default:@127.0.0.1:8123/', 'test_x'))).toMatchObject({ url: 'http://127.0.0.1:8123', database: 'test_x' });
  });
});

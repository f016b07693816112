import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSnowflakeConfig, SnowflakeConfigError, snowflakeServerSettings } from '../../connectors/snowflake/snowflake-options.js';
import { buildChangesSql, buildCountSql, buildReadSql, describeSql, fromItem, quoteIdent, SnowflakeSqlError, tablePath, watermarkBind } from '../../connectors/snowflake/snowflake-sql.js';
import { converterFor, integerValue, rowBuilder } from '../../connectors/snowflake/snowflake-values.js';
import type { ColumnInfo } from '../../connectors/warehouse.js';

const cols: ColumnInfo[] = [
  { name: 'user_id', type: 'text', nullable: true },
  { name: 'updated_at', type: 'timestamp_ntz', nullable: false },
  { name: 'plan', type: 'text', nullable: true },
  { name: 'props', type: 'variant', nullable: true },
  { name: 'n', type: 'fixed', nullable: true },
];

describe('snowflake query text', () => {
  it('quotes column names exactly and passes validated table paths through', () => {
    expect(quoteIdent('event_time')).toBe('"event_time"');
    expect(quoteIdent('we"ird')).toBe('"we""ird"');
    expect(tablePath('DB.PUBLIC.EVENTS')).toBe('DB.PUBLIC.EVENTS');
    expect(tablePath(' analytics."Mixed Case" ')).toBe('analytics."Mixed Case"');
    for (const bad of ['events; DROP TABLE x', 'a.b.c.d', 'ev ents', '', '"unterminated', 'x--']) {
      expect(() => tablePath(bad), bad).toThrow(SnowflakeSqlError);
    }
  });

  it('wraps a user query so a trailing semicolon or comment cannot break out', () => {
    expect(fromItem({ query: 'SELECT 1 -- note;\n;' })).toBe('(\nSELECT 1 -- note;\n) AS "src"');
    expect(describeSql({ table: 'EVENTS' })).toBe('SELECT * FROM EVENTS LIMIT 0');
    expect(() => fromItem({ query: ' ; ' })).toThrow(SnowflakeSqlError);
  });

  it('pushes the latest-row-per-key dedupe down as QUALIFY ROW_NUMBER() with text tie-breakers, and counts the same rows', () => {
    const { sqlText, binds } = buildReadSql({ source: { table: 'USERS' }, latestBy: { keyColumns: ['user_id'], orderColumn: 'updated_at' } }, cols);
    expect(sqlText).toBe(
      'SELECT * FROM USERS WHERE "user_id" IS NOT NULL QUALIFY ROW_NUMBER() OVER (PARTITION BY "user_id" ORDER BY "updated_at" DESC NULLS LAST, TO_VARCHAR("plan") DESC NULLS LAST, TO_VARCHAR("n") DESC NULLS LAST) = 1',
    );
    expect(binds).toEqual([]);
    const withTies = buildReadSql(
      { source: { table: 'USERS' }, columns: ['user_id', 'plan'], latestBy: { keyColumns: ['user_id'], orderColumn: 'updated_at', tieBreak: ['props'] }, orderBy: ['user_id'] },
      cols,
    );
    expect(withTies.sqlText).toBe(
      'SELECT "user_id", "plan" FROM USERS WHERE "user_id" IS NOT NULL QUALIFY ROW_NUMBER() OVER (PARTITION BY "user_id" ORDER BY "updated_at" DESC NULLS LAST, TO_VARCHAR("props") DESC NULLS LAST) = 1 ORDER BY "user_id"',
    );
    expect(buildCountSql({ source: { table: 'USERS' }, after: { column: 'n', value: 5 }, orderBy: ['n'], offset: 3 }, cols)).toEqual({
      sqlText: 'SELECT COUNT(*) AS "n" FROM (SELECT * FROM USERS WHERE "n" >= ?) AS "c"',
      binds: [5],
    });
  });

  it('filters time_based reads from the watermark on, compared as a timestamp, and resumes at an offset', () => {
    const { sqlText, binds } = buildReadSql(
      { source: { query: 'SELECT * FROM EVENTS' }, after: { column: 'updated_at', value: '2024-03-01T10:00:00.250Z' }, orderBy: ['updated_at'], offset: 500 },
      cols,
    );
    expect(sqlText).toBe(
      'SELECT * FROM (\nSELECT * FROM EVENTS\n) AS "src" WHERE "updated_at" >= TO_TIMESTAMP_NTZ(?) ORDER BY "updated_at" LIMIT NULL OFFSET 500',
    );
    expect(binds).toEqual(['2024-03-01 10:00:00.250']);
  });

  it('converts watermark values by column type', () => {
    const ms = Date.UTC(2024, 0, 2, 3, 4, 5, 678);
    expect(watermarkBind({ name: 't', type: 'timestamp_ntz', nullable: false }, ms)).toEqual({ placeholder: 'TO_TIMESTAMP_NTZ(?)', value: '2024-01-02 03:04:05.678' });
    expect(watermarkBind({ name: 't', type: 'timestamp_tz', nullable: false }, String(ms))).toEqual({ placeholder: 'TO_TIMESTAMP_TZ(?)', value: '2024-01-02 03:04:05.678 +00:00' });
    expect(watermarkBind({ name: 'd', type: 'date', nullable: false }, '2024-01-02T00:00:00Z')).toEqual({ placeholder: 'TO_DATE(?)', value: '2024-01-02' });
    expect(watermarkBind({ name: 'v', type: 'fixed', nullable: false }, 42)).toEqual({ placeholder: '?', value: 42 });
    expect(() => watermarkBind({ name: 't', type: 'timestamp_ntz', nullable: false }, 'yesterday')).toThrow(SnowflakeSqlError);
  });

  it('names unknown columns, with a case hint, and refuses an offset without an order', () => {
    expect(() => buildReadSql({ source: { table: 'T' }, after: { column: 'UPDATED_AT', value: 1 } }, cols)).toThrow(/did you mean updated_at/);
    expect(() => buildReadSql({ source: { table: 'T' }, latestBy: { keyColumns: ['nope'], orderColumn: 'updated_at' } }, cols)).toThrow(/key column "nope"/);
    expect(() => buildReadSql({ source: { table: 'T' }, offset: 10 }, cols)).toThrow(/offset needs orderBy/);
  });
});

describe('snowflake change tracking query', () => {
  it('reads the net changes of a table since a change point, ordered by key with a delete first', () => {
    const sql = buildChangesSql({ source: { table: 'ANALYTICS.PUBLIC.EVENTS' }, columns: ['updated_at', 'user_id'] }, cols, 1_700_000_000_000, 'user_id');
    expect(sql.sqlText).toBe(
      'SELECT "updated_at", "user_id", METADATA$ACTION AS "__action", METADATA$ISUPDATE AS "__isupdate" FROM ANALYTICS.PUBLIC.EVENTS ' +
        'CHANGES(INFORMATION => DEFAULT) AT(TIMESTAMP => TO_TIMESTAMP_LTZ(?, 3)) ORDER BY "user_id", METADATA$ACTION',
    );
    expect(sql.binds).toEqual([1_700_000_000_000]);
  });

  it('refuses a query source, an unknown key and a change point that is not epoch milliseconds', () => {
    expect(() => buildChangesSql({ source: { query: 'SELECT 1' } }, cols, 1, 'user_id')).toThrow(/reads a table, not a query/);
    expect(() => buildChangesSql({ source: { table: 'EVENTS' } }, cols, 1, 'NOPE')).toThrow(SnowflakeSqlError);
    expect(() => buildChangesSql({ source: { table: 'EVENTS' } }, cols, 1.5, 'user_id')).toThrow(/epoch milliseconds/);
  });
});

describe('snowflake values', () => {
  it('keeps integers beyond 2^53 as exact strings and everything else typed', () => {
    expect(integerValue('9007199254740991')).toBe(9007199254740991);
    expect(integerValue('9007199254740992')).toBe('9007199254740992');
    expect(integerValue('-123456789012345678901234567890')).toBe('-123456789012345678901234567890');
    expect(converterFor({ name: 'x', type: 'fixed', scale: 2 })('12.50')).toBe(12.5);
    expect(converterFor({ name: 'x', type: 'real', scale: 0 })('NaN')).toBe('NaN');
    expect(converterFor({ name: 'x', type: 'variant', scale: 0 })('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(converterFor({ name: 'x', type: 'variant', scale: 0 })('not json')).toBe('not json');
    const d = converterFor({ name: 'x', type: 'timestamp_ntz', scale: 9 })(new Date(5));
    expect(d).toEqual(new Date(5));
    expect(Object.getPrototypeOf(d)).toBe(Date.prototype);
    const build = rowBuilder([
      { name: 'a', type: 'fixed', scale: 0 },
      { name: 'b', type: 'text', scale: 0 },
    ]);
    expect(build(['7', null])).toEqual({ a: 7, b: null });
  });
});

describe('snowflake source config', () => {
  const settings = snowflakeServerSettings({ SNOWFLAKE_ALLOWED_ACCESS_URLS: 'http://127.0.0.1:4455, https://sf-proxy.internal:8443/', SNOWFLAKE_CONNECT_TIMEOUT_MS: 1000 });
  const base = { account: 'myorg-acct', username: 'loader', password: 'pw', warehouse: 'WH', database: 'DB', schema: 'PUBLIC', role: 'LOADER' };

  it('accepts password auth and normalises a pasted account URL', () => {
    const o = parseSnowflakeConfig({ ...base, account: 'https://xy12345.eu-west-1.snowflakecomputing.com/' }, settings);
    expect(o.account).toBe('xy12345.eu-west-1');
    expect(o.auth).toEqual({ kind: 'password', password: 'pw' });
    expect(o.accessUrl).toBeUndefined();
  });

  it('allows access_url only for origins the operator listed', () => {
    expect(parseSnowflakeConfig({ ...base, access_url: 'https://sf-proxy.internal:8443' }, settings).accessUrl).toBe('https://sf-proxy.internal:8443');
    const refused = (url: string) => {
      try {
        parseSnowflakeConfig({ ...base, access_url: url }, settings);
        return undefined;
      } catch (err) {
        return (err as SnowflakeConfigError).issues[0];
      }
    };
    expect(refused('http://169.254.169.254')).toMatchObject({ field: 'access_url', message: expect.stringMatching(/SNOWFLAKE_ALLOWED_ACCESS_URLS/) });
    expect(refused('http://127.0.0.1:4455/path')).toMatchObject({ field: 'access_url' });
    expect(refused('file:///etc/passwd')).toMatchObject({ field: 'access_url' });
    expect(() => parseSnowflakeConfig({ ...base, access_url: 'http://127.0.0.1:1' }, { allowedAccessUrls: [] })).toThrow(SnowflakeConfigError);
  });

  it('needs exactly one credential, refuses unknown fields and never echoes secrets', () => {
    const problems = (raw: object) => {
      try {
        parseSnowflakeConfig(raw, settings);
        return [];
      } catch (err) {
        expect((err as Error).message).not.toContain('s3cret-value');
        return (err as SnowflakeConfigError).issues.map((i) => i.field);
      }
    };
    expect(problems({ account: 'a', username: 'u' })).toEqual(['password']);
    expect(problems({ ...base, password: 's3cret-value', private_key: 'x' })).toEqual(['password', 'private_key']);
    expect(problems({ ...base, pasword: 's3cret-value' })).toEqual(['config']);
    expect(problems({ ...base, account: 'evil.com/path?x=' })).toEqual(['account']);
    expect(problems({ ...base, warehouse: 'WH"; DROP' })).toEqual(['warehouse']);
  });

  it('checks a key-pair private key and its passphrase at create time', () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const encrypted = privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'right' }) as string;
    const { password: _pw, ...noPassword } = base;
    const ok = parseSnowflakeConfig({ ...noPassword, private_key: encrypted, private_key_passphrase: 'right' }, settings);
    expect(ok.auth.kind).toBe('key_pair');
    expect(() => parseSnowflakeConfig({ ...noPassword, private_key: encrypted, private_key_passphrase: 'wrong' }, settings)).toThrow(/wrong private_key_passphrase/);
    expect(() => parseSnowflakeConfig({ ...noPassword, private_key: encrypted }, settings)).toThrow(/give private_key_passphrase/);
    expect(() => parseSnowflakeConfig({ ...noPassword, private_key: 'hello' }, settings)).toThrow(/PEM private key/);
  });
});

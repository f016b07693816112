/**
 * Hostile tenant, finding 6: regular expressions with catastrophic backtracking on user input. An
 * unanchored `X+$` retries from every position of a long run of X, so a 95 kB query of
 * semicolons (or spaces, or an account of slashes) followed by one other character took seconds.
 * Every such input is parsed in one linear pass now: each of these finishes in milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { cleanUserQuery, fromItem as sqlFromItem, quoteTable } from '../../connectors/sql-builder.js';
import { fromItem as snowflakeFromItem, tablePath } from '../../connectors/snowflake/snowflake-sql.js';
import { normaliseAccount, snowflakeConfigSchema } from '../../connectors/snowflake/snowflake-options.js';
import { parseExpression } from '../../src/domain/where-expression.js';
import { call } from '../helpers/warehouse.js';
import { whileProbing } from './latency-probe.js';
import { tenantApp } from './tenant-app.js';

const N = 95_000;
const timed = (fn: () => unknown): number => {
  const started = performance.now();
  try {
    fn();
  } catch {
    /* a refusal is fine: only the time matters here */
  }
  return performance.now() - started;
};

// A generous bound for a shared 2-core machine; the quadratic versions took several seconds each.
const FAST_MS = 250;

describe('linear parsing of user strings (95 kB adversarial inputs)', () => {
  const adversarial: [string, () => unknown][] = [
    ['sql query: semicolons then a letter', () => cleanUserQuery(`SELECT 1${';'.repeat(N)}x`)],
    ['sql query: spaces then a letter', () => cleanUserQuery(`SELECT 1${' '.repeat(N)}x`)],
    ['sql query: alternating ; and space', () => sqlFromItem({ query: `SELECT 1${'; '.repeat(N / 2)}x` })],
    ['snowflake query: semicolons then a letter', () => snowflakeFromItem({ query: `SELECT 1${';'.repeat(N)}x` })],
    ['snowflake query: semicolons, spaces, semicolon', () => snowflakeFromItem({ query: `SELECT 1${';'.repeat(N / 2)}${' '.repeat(N / 2)};x` })],
    ['snowflake account: slashes then a letter', () => normaliseAccount(`${'/'.repeat(N)}x`)],
    ['snowflake account through the config schema', () => snowflakeConfigSchema.safeParse({ account: `${'/'.repeat(N)}x`, username: 'u', password: 'p' })],
    ['snowflake table path: quotes', () => tablePath(`"${'""'.repeat(N / 2)}x`)],
    ['snowflake table path: dotted parts', () => tablePath(`${'a.'.repeat(N / 2)}!`)],
    ['sql table name: quotes', () => quoteTable(`"${'""'.repeat(N / 2)}x`)],
    ['where expression: long string literal', () => parseExpression(`"${'\\"'.repeat(N / 2)}`)],
  ];
  for (const [name, fn] of adversarial) {
    it(name, () => {
      timed(fn); // warm up (JIT), then measure
      expect(timed(fn)).toBeLessThan(FAST_MS);
    });
  }

  it('still strips what it stripped before', () => {
    expect(cleanUserQuery('SELECT 1 ;; \n ; ')).toBe('SELECT 1');
    expect(snowflakeFromItem({ query: 'select 1;;  ' })).toBe('(\nselect 1\n) AS "src"');
    expect(normaliseAccount('https://xy12345.eu-west-1.snowflakecomputing.com///')).toBe('xy12345.eu-west-1');
    expect(() => cleanUserQuery(' ;;; ')).toThrow(/empty/);
  });

  it('refuses an account longer than any real one before parsing it', () => {
    const r = snowflakeConfigSchema.safeParse({ account: 'a'.repeat(5000), username: 'u', password: 'p' });
    expect(r.success).toBe(false);
  });
});

describe('a 95 kB adversarial import query over HTTP', () => {
  const w = tenantApp({}, { source: true });

  it('is refused with a 400 quickly, and other clients keep being answered', async () => {
    const source = await call(w.api, 'POST', '', w.src.sourceBody());
    expect(source.status).toBe(200);
    const started = performance.now();
    const { result, worstMs } = await whileProbing(`${w.app.url}/healthz`, () =>
      call(w.api, 'POST', '/imports', {
        warehouse_source_id: source.body.results.id,
        import_type: 'events',
        table_params: { query: `SELECT ts FROM ev${';'.repeat(N)}x` },
        sync_mode: 'full_sync',
        event_name: 'e',
        time_column_name: 'ts',
      }),
    );
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ status: 'error' });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(worstMs).toBeLessThan(500);
  });
});

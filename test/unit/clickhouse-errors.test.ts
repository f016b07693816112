/** Which ClickHouse failures mean "not now" (503, retry) and which are the query's own fault. */
import { ClickHouseError } from '@clickhouse/client';
import { describe, expect, it } from 'vitest';
import { isUnavailable, serverErrorCode } from '../../src/store/clickhouse/clickhouse-connection.js';

// Error texts as ClickHouse 18.16 answers them (no trailing error name: the client leaves them plain Errors).
const SHARD_DOWN = 'Code: 279, e.displayText() = DB::NetException: All connection tries failed. Log: \n\nCode: 210, e.displayText() = DB::NetException: Connection refused (127.0.0.1:9129), e.what() = DB::NetException\n';
const NO_TABLE = "Code: 60, e.displayText() = DB::Exception: Table default.nope doesn't exist., e.what() = DB::Exception\n";

describe('ClickHouse errors', () => {
  it('reads the code of an 18.16 error text and of a parsed ClickHouseError', () => {
    expect(serverErrorCode(new Error(SHARD_DOWN))).toBe('279');
    expect(serverErrorCode(new Error(NO_TABLE))).toBe('60');
    expect(serverErrorCode(new ClickHouseError({ message: 'x', code: '252', type: 'TOO_MANY_PARTS' }))).toBe('252');
    expect(serverErrorCode(new Error('socket hang up'))).toBeUndefined();
  });

  it('a shard down, a network error or too many parts is unavailable; a missing table is not', () => {
    expect(isUnavailable(new Error(SHARD_DOWN))).toBe(true);
    expect(isUnavailable(new ClickHouseError({ message: 'x', code: '252', type: 'TOO_MANY_PARTS' }))).toBe(true);
    expect(isUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isUnavailable(new Error(NO_TABLE))).toBe(false);
    expect(isUnavailable(new Error('Syntax error'))).toBe(false);
  });
});

/** Retry classification by types and codes (src/runs/failure.ts, src/lib/error-codes.ts), never by message words. */
import { describe, expect, it } from 'vitest';
import { WarehouseError } from '../../connectors/warehouse.js';
import { classifyCode, errorCode } from '../../src/lib/error-codes.js';
import { PermanentError, RetryableError } from '../../src/lib/errors.js';
import { classifyError, interruptionCause, isFinalAttempt, isInfrastructureFailure } from '../../src/runs/failure.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('retry classification', () => {
  it('our own types decide first, whatever the message says', () => {
    expect(classifyError(new PermanentError('could not obtain lock; retry later'))).toBe('permanent');
    expect(classifyError(new RetryableError('bad credentials, table does not exist'))).toBe('retryable');
    expect(classifyError(new WarehouseError('timeout', false))).toBe('permanent');
    expect(classifyError(new WarehouseError('password authentication failed', true))).toBe('retryable');
  });

  it('PostgreSQL SQLSTATE classes (what connectors translate into WarehouseError)', () => {
    expect(classifyCode('08006')).toBe('retryable'); // connection failure
    expect(classifyCode('40P01')).toBe('retryable'); // deadlock
    expect(classifyCode('55P03')).toBe('retryable'); // lock not available
    expect(classifyCode('57P01')).toBe('retryable'); // admin shutdown
    expect(classifyCode('42P01')).toBe('permanent'); // undefined table
    expect(classifyCode('28P01')).toBe('permanent'); // bad password
    expect(classifyCode('3D000')).toBe('permanent'); // no such database
    expect(classifyCode('25006')).toBe('permanent'); // read-only transaction
    expect(classifyCode(undefined)).toBeUndefined();
  });

  it('SQLite and network codes; the cause chain is followed for the code', () => {
    expect(classifyCode('SQLITE_BUSY')).toBe('retryable');
    expect(classifyCode('SQLITE_BUSY_SNAPSHOT')).toBe('retryable');
    expect(classifyCode('SQLITE_ERROR')).toBe('permanent');
    expect(classifyCode('SQLITE_BUSYNESS')).toBe('permanent');
    const fetchFailed = new TypeError('fetch failed', { cause: coded('ECONNRESET') });
    expect(errorCode(fetchFailed)).toBe('ECONNRESET');
    expect(classifyCode(errorCode(fetchFailed))).toBe('retryable');
    expect(classifyCode(errorCode(new TypeError('fetch failed', { cause: coded('ENOTFOUND') })))).toBe('permanent');
  });

  it('an error of no known type is retried, even if its text says "block", "invalid" or "does not exist"', () => {
    expect(classifyError(new Error('a block of rows was invalid'))).toBe('retryable');
    // Our own database's error (no translation at an edge): the next attempt may find it fixed.
    expect(classifyError(coded('42P01', 'relation "events" does not exist'))).toBe('retryable');
    expect(classifyError('string thrown')).toBe('retryable');
  });

  it('infrastructure failures are BullMQ\'s own reasons, compared whole', () => {
    expect(isInfrastructureFailure('job stalled more than allowable limit')).toBe(true);
    expect(isInfrastructureFailure('job started more than allowable limit')).toBe(true);
    expect(isInfrastructureFailure('could not acquire lock on block 7')).toBe(false);
    expect(isInfrastructureFailure(undefined)).toBe(false);
  });

  it('final attempt from the catalog', () => {
    expect(isFinalAttempt('batch-import', 4)).toBe(false);
    expect(isFinalAttempt('batch-import', 5)).toBe(true);
  });

  it('an interruption names its cause in the run log: shutdown, a lost lock, the timeout', () => {
    const aborted = (reason?: unknown) => {
      const ac = new AbortController();
      ac.abort(reason);
      return ac.signal;
    };
    expect(interruptionCause(aborted(new Error('worker shutting down')))).toBe('worker shutting down');
    expect(interruptionCause(aborted(new Error('lost the lock on job 7')))).toBe('lost the lock on job 7');
    expect(interruptionCause(aborted())).toBe('shutdown');
  });
});

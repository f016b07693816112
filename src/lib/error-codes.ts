/**
 * Driver error codes → whether another attempt may succeed. Codes, never message text: PostgreSQL
 * SQLSTATE classes, SQLite result codes, Node/undici network codes. Used by the run machinery
 * (src/runs/failure.ts) and by connectors that translate their driver's errors.
 */

import { PermanentError, RetryableError, StoreUnavailableError } from './errors.js';

export type FailureKind = 'permanent' | 'retryable';

const PG_RETRYABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);
const PG_RETRYABLE_CODES = new Set(['55P03', '55006']);
const PG_PERMANENT_CLASSES = new Set(['42', '28', '3D', '3F', '22', '25', '0A', '23']);
const SQLSTATE = /^[0-9A-Z]{5}$/;
const SQLITE_RETRYABLE = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED']);
const NETWORK_RETRYABLE = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
const NETWORK_PERMANENT = new Set(['ENOTFOUND', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'ERR_TLS_CERT_ALTNAME_INVALID']);

/** The kind of a driver error code (SQLSTATE, SQLite, Node), or undefined when the code says nothing. */
export function classifyCode(code: string | undefined): FailureKind | undefined {
  if (!code) return undefined;
  if (SQLSTATE.test(code)) {
    if (PG_RETRYABLE_CODES.has(code) || PG_RETRYABLE_CLASSES.has(code.slice(0, 2))) return 'retryable';
    if (PG_PERMANENT_CLASSES.has(code.slice(0, 2))) return 'permanent';
    return undefined;
  }
  // Extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_LOCKED_SHAREDCACHE) share their primary's kind.
  if (code.startsWith('SQLITE_')) return [...SQLITE_RETRYABLE].some((c) => code === c || code.startsWith(`${c}_`)) ? 'retryable' : 'permanent';
  if (NETWORK_RETRYABLE.has(code)) return 'retryable';
  if (NETWORK_PERMANENT.has(code)) return 'permanent';
  return undefined;
}


/** SQLSTATEs outside class 08 that still mean "no connection": shut down, starting up, no free slot. */
const PG_CONNECTION_CODES = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * A code saying the connection itself failed (refused, reset, timed out, closed by a server
 * shutting down, no slot free), whatever the statement was: the server is not there right now.
 */
export function isConnectionCode(code: string | undefined): boolean {
  if (!code) return false;
  if (SQLSTATE.test(code)) return code.startsWith('08') || PG_CONNECTION_CODES.has(code);
  return NETWORK_RETRYABLE.has(code);
}

/** The driver code of an error or of its cause chain (what classifyError looks at). */
export function errorCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | null, depth = 0; e && typeof e === 'object' && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') return e.code;
  }
  return undefined;
}

/**
 * Whether an error may come from our own store being out. Our own retryable and permanent types
 * (a connector's, a runner's verdict) and errors carrying a source's `retryable` verdict
 * (WarehouseError) never do; knex's pool timing out does (the database is too busy to lend a
 * connection).
 */
export function looksLikeStoreOutage(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (carriesVerdict(err)) return false;
  if ((err as Error | null)?.name === 'KnexTimeoutError') return true;
  return isConnectionCode(errorCode(err));
}

/** An error someone has judged: one of our own types, or one carrying a source's `retryable`. */
export function carriesVerdict(err: unknown): boolean {
  if (err instanceof RetryableError || err instanceof PermanentError) return true;
  return typeof (err as { retryable?: unknown } | null)?.retryable === 'boolean';
}

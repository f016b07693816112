/**
 * The thin layer over snowflake-sdk: load and configure it once (quiet, strict), open a session,
 * run a statement, and translate its errors into messages a user can act on. The driver is loaded
 * lazily, so processes that never touch a Snowflake source never load it.
 */
import { ownValue } from '../../src/lib/own.js';
import type { Connection, ConnectionOptions, RowStatement, SnowflakeError } from 'snowflake-sdk';
import { applySnowflakeDriverEnv } from '../../config/snowflake-driver-env.js';
import { WarehouseError, WarehouseReadAborted } from '../warehouse.js';
import type { SnowflakeConnectOptions } from './snowflake-options.js';
import { FETCH_AS_STRING } from './snowflake-values.js';

type SnowflakeModule = typeof import('snowflake-sdk');

let loading: Promise<SnowflakeModule> | undefined;

/** The configured driver module (loaded on first use). */
export function loadSnowflake(): Promise<SnowflakeModule> {
  loading ??= (async () => {
    applySnowflakeDriverEnv();
    const mod = ((await import('snowflake-sdk')) as unknown as { default: SnowflakeModule }).default;
    const silent = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };
    mod.configure({
      // The driver's own logger writes snowflake.log in the working directory and to the console
      // by default; ours stays silent. Errors reach the caller through callbacks, and the
      // connector logs them itself (without credentials).
      logLevel: 'OFF',
      additionalLogToConsole: false,
      customLogger: silent,
      // Default VARIANT parsing falls back to `new Function(value)` for non-JSON text: never eval
      // warehouse data. (VARIANTs are fetched as strings anyway; this covers anything that is not.)
      jsonColumnVariantParser: (raw: string) => JSON.parse(raw),
    });
    return mod;
  })();
  return loading;
}

/** The connection options the driver gets: credentials, session context and our fixed read settings. */
export function driverOptions(opts: SnowflakeConnectOptions): ConnectionOptions {
  const auth =
    opts.auth.kind === 'password'
      ? { password: opts.auth.password }
      : { authenticator: 'SNOWFLAKE_JWT', privateKey: opts.auth.privateKey, privateKeyPass: opts.auth.passphrase };
  return {
    account: opts.account,
    username: opts.username,
    ...auth,
    warehouse: opts.warehouse,
    database: opts.database,
    schema: opts.schema,
    role: opts.role,
    ...(opts.accessUrl ? { accessUrl: opts.accessUrl } : {}),
    application: 'analytics-warehouse-sync',
    rowMode: 'array',
    streamResult: true,
    fetchAsString: [...FETCH_AS_STRING],
    // With fetchAsString, the driver would otherwise turn SQL NULL into the string "NULL".
    representNullAsStringNull: false,
    // A login that fails on the network is retried once; the connector's own timeout bounds the wait.
    sfRetryMaxLoginRetries: 1,
    clientSessionKeepAlive: false,
  } as ConnectionOptions;
}

/** Opens a session, or throws a translated error (bad credentials: WarehouseError; unreachable: a retryable WarehouseError). */
export async function openConnection(opts: SnowflakeConnectOptions, timeoutMs: number): Promise<Connection> {
  const sf = await loadSnowflake();
  let conn: Connection;
  try {
    conn = sf.createConnection(driverOptions(opts));
  } catch (err) {
    throw translateError(err, 'login', opts);
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => {
        reject(new WarehouseError(`Snowflake login timed out after ${Math.round(timeoutMs / 1000)}s: could not reach ${describeHost(opts)}`, true));
      }, timeoutMs);
      timer.unref();
      conn.connect((err) => (err ? reject(translateError(err, 'login', opts)) : resolve()));
    });
    return conn;
  } catch (err) {
    conn.destroy(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a session; best effort, bounded, never throws. */
export function closeConnection(conn: Connection, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    timer.unref();
    try {
      conn.destroy(() => {
        clearTimeout(timer);
        resolve();
      });
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}

/**
 * Submits a statement and waits until its result metadata is there (the query finished in
 * Snowflake; rows are then fetched lazily by `statement.streamRows()`). An abort cancels the
 * statement in Snowflake, so a long query stops costing warehouse time.
 */
export function executeStatement(
  conn: Connection,
  sqlText: string,
  binds: (string | number)[],
  signal?: AbortSignal,
): Promise<RowStatement> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelledError());
    let settled = false;
    const onAbort = () => {
      if (settled) return;
      settled = true;
      statement.cancel(() => {});
      reject(cancelledError());
    };
    const statement = conn.execute({
      sqlText,
      binds,
      streamResult: true,
      complete: (err, stmt) => {
        signal?.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        if (err) reject(translateError(err, 'query'));
        else resolve(stmt as RowStatement);
      },
    }) as RowStatement;
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function cancelledError(): WarehouseReadAborted {
  return new WarehouseReadAborted();
}

function describeHost(opts: SnowflakeConnectOptions): string {
  return opts.accessUrl ?? `${opts.account}.snowflakecomputing.com`;
}

// Login error codes Snowflake answers with when it refuses a session (all user-fixable).
const LOGIN_HINTS: Record<string, string> = {
  '390100': 'check username and password',
  '390144': 'the key-pair JWT was refused: check that the public key is set on the user (ALTER USER … SET RSA_PUBLIC_KEY) and matches private_key',
  '390189': 'the role is not granted to this user',
  '390101': 'the user is disabled',
  '390102': 'the user is locked',
};

/**
 * A driver error as one of ours. The message carries what Snowflake said (it never contains
 * credentials: the driver builds it from the server's answer or its own templates) plus a hint.
 */
export function translateError(err: unknown, phase: 'login' | 'query', opts?: SnowflakeConnectOptions): Error {
  if (err instanceof WarehouseError || err instanceof WarehouseReadAborted) return err;
  const e = err as Partial<SnowflakeError> & { name?: string; message?: string; cause?: { message?: string; code?: string }; response?: { statusCode?: number } };
  const message = (e.message ?? String(err)).trim();
  const code = e.code === undefined ? undefined : String(e.code);
  const where = opts ? describeHost(opts) : 'Snowflake';

  if (e.name === 'NetworkError') {
    const cause = e.cause?.message ?? e.cause?.code ?? message;
    return new WarehouseError(`could not reach Snowflake at ${where}: ${cause}`, true);
  }
  if (e.name === 'RequestFailedError') {
    const status = e.response?.statusCode;
    if (status !== undefined && status >= 500) return new WarehouseError(`Snowflake answered HTTP ${status}; will retry`, true);
    const hint = phase === 'login' ? ': check the account identifier' : '';
    return new WarehouseError(`Snowflake refused the request (HTTP ${status ?? '?'})${hint}`);
  }
  if (phase === 'login') {
    if (e.name === 'OperationFailedError' || (code !== undefined && code.startsWith('390'))) {
      const hint = code ? ownValue(LOGIN_HINTS, code) : undefined;
      return new WarehouseError(`Snowflake refused the login to ${where}: ${message}${hint ? ` (${hint})` : ''}`);
    }
    // Invalid options caught by the driver itself (e.g. a malformed private key).
    return new WarehouseError(`Snowflake connection settings rejected: ${message}`);
  }
  if (e.name === 'OperationFailedError') {
    if (code === '000604') return cancelledError();
    const sqlState = e.sqlState ? `, SQL state ${e.sqlState}` : '';
    const queryId = (e.data as { queryId?: string } | undefined)?.queryId;
    const hint = code === '000606' ? ' (set `warehouse` on the source, or give the user a DEFAULT_WAREHOUSE)' : '';
    return new WarehouseError(`Snowflake query failed: ${message}${hint} (code ${code ?? '?'}${sqlState}${queryId ? `, query id ${queryId}` : ''})`);
  }
  if (e.name === 'LargeResultSetError') return new WarehouseError(`downloading a Snowflake result chunk failed: ${message}`, true);
  return new WarehouseError(`Snowflake error: ${message}`, true);
}

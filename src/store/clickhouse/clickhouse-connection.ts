/**
 * One @clickhouse/client per store, configured for the subset ClickHouse 18.16 speaks over HTTP
 * (see docs/scaling.md "ClickHouse 18.16"): plain JSONEachRow in and out, no query parameters
 * (literals come from clickhouse-sql.ts), no async inserts. Every call goes through `run()`,
 * which turns "the server is not there / not able right now" into StoreUnavailableError (HTTP
 * 503, retryable job) and lets real query errors through as they are.
 */
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StoreUnavailableError } from '../../lib/errors.js';
import { Utf8Chunks } from '../../lib/utf8-chunks.js';
import type { ClickHouseTarget } from './clickhouse-url.js';

/**
 * ClickHouse error codes that mean "not now" rather than "wrong query": network and socket
 * errors, timeouts, overload, a shard of a cluster unreachable, read-only replicas.
 */
const UNAVAILABLE_CODES = new Set([
  '3', // UNEXPECTED_END_OF_FILE
  '159', // TIMEOUT_EXCEEDED
  '164', // READONLY
  '202', // TOO_MANY_SIMULTANEOUS_QUERIES
  '209', // SOCKET_TIMEOUT
  '210', // NETWORK_ERROR
  '241', // MEMORY_LIMIT_EXCEEDED
  '242', // TABLE_IS_READ_ONLY
  '252', // TOO_MANY_PARTS
  '279', // ALL_CONNECTION_TRIES_FAILED (a shard is down)
  '394', // QUERY_WAS_CANCELLED
  '1000', // POCO_EXCEPTION (18.16: connection refused to a remote shard)
]);

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * The server's error code. Current servers end the message with the error's name, which the
 * client parses into a ClickHouseError; 18.16 does not (`Code: 279, e.displayText() = …,
 * e.what() = DB::NetException`), so there the client hands over a plain Error with that text.
 */
export function serverErrorCode(err: unknown): string | undefined {
  if (err instanceof ClickHouseError) return err.code;
  const message = (err as { message?: unknown })?.message;
  return typeof message === 'string' ? /^\s*Code: (\d+)[,.]/.exec(message)?.[1] : undefined;
}

export function isUnavailable(err: unknown): boolean {
  const code = serverErrorCode(err);
  if (code !== undefined) return UNAVAILABLE_CODES.has(code);
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /socket hang up|Timeout error|other side closed|ECONNRESET/i.test(message);
}

/** The server's defaults for query text (max_query_size, max_ast_elements). */
const DEFAULT_QUERY_BYTES = 256 * 1024;
const DEFAULT_AST_ELEMENTS = 50_000;

/**
 * Limits raised for a long query: key lookups list thousands of ids, and a long `where` compiles
 * to text linear in its size (clickhouse-expression.ts) that can pass the defaults. Our queries
 * average well over one character per syntax-tree node, so the text's length bounds the tree.
 */
function sizeLimitsFor(sql: string): ClickHouseSettings {
  if (sql.length < DEFAULT_QUERY_BYTES / 2) return {};
  const bytes = Buffer.byteLength(sql);
  return { max_query_size: String(bytes + DEFAULT_QUERY_BYTES), max_ast_elements: String(Math.max(DEFAULT_AST_ELEMENTS, bytes)) };
}

export interface ClickHouseConnectionOptions {
  /** Cluster mode: inserts into the Distributed table wait until every shard has the rows. */
  distributedSync?: boolean;
  requestTimeoutMs?: number;
}

export class ClickHouseConnection {
  readonly client: ClickHouseClient;

  constructor(
    readonly target: ClickHouseTarget,
    options: ClickHouseConnectionOptions = {},
  ) {
    const settings: ClickHouseSettings = {
      // 64-bit integers as JSON numbers: our Int64/UInt64 values (ms times, counts) are < 2^53.
      output_format_json_quote_64bit_integers: 0,
    };
    // Without it a Distributed insert is queued on the local disk and sent later: a 200 would
    // not mean the shard has the rows, and a read right after would miss them.
    if (options.distributedSync) settings.insert_distributed_sync = 1;
    this.client = createClient({
      url: target.url,
      username: target.username,
      password: target.password,
      database: target.database,
      request_timeout: options.requestTimeoutMs ?? 60_000,
      clickhouse_settings: settings,
      // Errors reach our logger through the store; the client's own console logger would
      // print every refused connection during an outage.
      log: { level: ClickHouseLogLevel.OFF },
      // 18.16's keep_alive_timeout is 3 s: reuse idle sockets for less than that (the default).
      keep_alive: { enabled: true, idle_socket_ttl: 2500 },
    });
  }

  /** Runs one call; outages become StoreUnavailableError. */
  async run<T>(what: string, f: (client: ClickHouseClient) => Promise<T>): Promise<T> {
    try {
      return await f(this.client);
    } catch (err) {
      if (isUnavailable(err)) throw new StoreUnavailableError(`ClickHouse unavailable during ${what}`, { cause: err });
      throw err;
    }
  }

  /** DDL and other statements without a result. */
  async command(sql: string): Promise<void> {
    await this.run('command', (c) => c.command({ query: sql }));
  }

  /** A query's rows as objects (JSONEachRow). */
  async rows<T = Record<string, unknown>>(sql: string, settings?: ClickHouseSettings): Promise<T[]> {
    return this.run('query', async (c) => {
      const rs = await c.query({ query: sql, format: 'JSONEachRow', clickhouse_settings: { ...sizeLimitsFor(sql), ...settings } });
      return (await rs.json()) as T[];
    });
  }

  /**
   * One INSERT of all `values` (JSONEachRow): one HTTP request, one part per shard. It resolves
   * only once the server has written the rows (no async inserts), so a caller's 200 is durable.
   */
  async insert(table: string, values: readonly Record<string, unknown>[]): Promise<void> {
    if (values.length === 0) return;
    await this.run('insert', (c) => c.insert({ table, values: values as Record<string, unknown>[], format: 'JSONEachRow' }));
  }

  /**
   * One INSERT of a RowBinary body already encoded (`columns` in the order of its fields): like
   * `insert`, without the client encoding objects on this thread. Its chunks are released for
   * reuse once the server has answered (only then has it read them all).
   */
  async insertRowBinary(table: string, columns: readonly string[], body: Utf8Chunks): Promise<void> {
    if (body.byteLength === 0) return;
    await this.run('insert', async (c) => {
      const result = await c.exec({ query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT RowBinary`, values: Readable.from(body.chunks()) });
      // The answer arrives once the rows are written; drain it so the socket goes back to the pool.
      await pipeline(result.stream, new Writable({ write: (_chunk, _enc, done) => done() }));
    });
    body.release();
  }

  /** The server's version, e.g. `18.16.1`. */
  async version(): Promise<string> {
    const [row] = await this.rows<{ v: string }>('SELECT version() AS v');
    return row?.v ?? 'unknown';
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

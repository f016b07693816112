/**
 * A local stand-in for the Databricks SQL Statement Execution API (REST 2.0) that the databricks
 * connector uses, answering from a SQLite file (tables made by the fixture, their Databricks
 * column types kept in `__dbx_columns`, which also serves `<catalog>.information_schema.columns`).
 *
 * - Every call needs `Authorization: Bearer <token>` of a known token (none: 401; unknown: 403
 *   "Invalid access token.", as Databricks answers).
 * - `POST /api/2.0/sql/statements`: `warehouse_id` (unknown: 404; a user without CAN USE: 403),
 *   `catalog` / `schema` (unknown: the statement FAILS with NO_SUCH_CATALOG_EXCEPTION /
 *   SCHEMA_NOT_FOUND), named typed `parameters` (`:name` markers), `disposition` INLINE and
 *   `format` JSON_ARRAY only, `wait_timeout` (waits up to it, capped by `maxWaitMs`, then answers
 *   RUNNING), `on_wait_timeout` CONTINUE. A missing table or a user without SELECT fails the
 *   statement (TABLE_OR_VIEW_NOT_FOUND / INSUFFICIENT_PERMISSIONS). Results: `manifest` (schema
 *   with type_name / type_text, total_row_count, total_chunk_count) and chunk 0 inline.
 * - `GET …/statements/{id}` (poll), `GET …/statements/{id}/result/chunks/{n}` (the
 *   `next_chunk_internal_link`s), produced lazily from SQLite when asked for (back-pressure is
 *   observable in `stats().chunks`); `POST …/statements/{id}/cancel`.
 *
 * Not covered: EXTERNAL_LINKS, ARROW_STREAM / CSV formats, byte limits (the real INLINE cap is
 * 25 MiB), row_limit, positional parameters, OAuth M2M token minting, Thrift (@databricks/sql),
 * and Databricks SQL beyond what SQLite understands after the small translation.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { toSqlite, translate } from '../bigquery-standin/standin-sql.js';
import { storedTime } from '../bigquery-standin/standin-wire.js';
import { rewriteChangeFeed, StandinChangeFeedError } from './standin-changes.js';

export interface DatabricksUser {
  token: string;
  name: string;
  /** CAN USE on the warehouse (default true). */
  canUseWarehouse?: boolean;
  /** SELECT on the tables (default true). */
  canSelect?: boolean;
}

export interface DatabricksStandinOptions {
  dbPath: string;
  warehouseId: string;
  catalog: string;
  schema: string;
  users: DatabricksUser[];
  /** Rows per result chunk (default 1000). */
  chunkRows?: number;
  /** Cap on how long a call waits for a running statement (default 10 s). */
  maxWaitMs?: number;
  host?: string;
  port?: number;
}

export interface DatabricksStandinStats {
  unauthorized: number;
  statements: { id?: string; statement: string; catalog?: string; schema?: string; parameters: unknown[]; state?: string; error?: string }[];
  chunks: { id: string; index: number; rows: number; at: number }[];
  cancels: string[];
}

export interface DatabricksStandinHandle {
  url: string;
  stats(): DatabricksStandinStats;
  setQueryDelay(ms: number): void;
  close(): Promise<void>;
}

export const COLUMNS_TABLE = '__dbx_columns';

interface Column {
  name: string;
  type_name: string;
  type_text: string;
}

interface Statement {
  id: string;
  db: Database.Database;
  stmt: Database.Statement;
  params: Record<string, unknown>;
  columns: Column[];
  total: number;
  readyAt: number;
  cancelled: boolean;
  iter?: IterableIterator<unknown[]>;
  next: number;
  last?: { index: number; body: object };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
class StatementFailure extends Error {}

/** information_schema data_type → the manifest's type_name. */
const TYPE_NAME: Record<string, string> = { BIGINT: 'LONG', SMALLINT: 'SHORT', TINYINT: 'BYTE' };

export async function startDatabricksStandin(options: DatabricksStandinOptions): Promise<DatabricksStandinHandle> {
  const meta = new Database(options.dbPath);
  meta.pragma('journal_mode = WAL');
  meta.exec(`CREATE TABLE IF NOT EXISTS ${COLUMNS_TABLE} (table_name TEXT, column_name TEXT, ordinal_position INTEGER, data_type TEXT, is_nullable TEXT)`);
  const statements = new Map<string, Statement>();
  const chunkRows = options.chunkRows ?? 1000;
  const maxWaitMs = options.maxWaitMs ?? 10_000;
  let queryDelayMs = 0;
  const stats: DatabricksStandinStats = { unauthorized: 0, statements: [], chunks: [], cancels: [] };
  const dataType = (table: string, column: string) =>
    (meta.prepare(`SELECT data_type FROM ${COLUMNS_TABLE} WHERE table_name = ? AND column_name = ?`).get(table, column) as { data_type: string } | undefined)?.data_type;
  const tableExists = (t: string) => meta.prepare(`SELECT 1 FROM ${COLUMNS_TABLE} WHERE table_name = ?`).get(t) !== undefined;

  function authorize(req: http.IncomingMessage): DatabricksUser {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!m) {
      stats.unauthorized += 1;
      throw new HttpError(401, '401', 'Credential was not sent or was of an unsupported type for this API.');
    }
    const user = options.users.find((u) => u.token === m[1]);
    if (!user) {
      stats.unauthorized += 1;
      throw new HttpError(403, '403', 'Invalid access token.');
    }
    return user;
  }

  function prepare(body: Record<string, any>, user: DatabricksUser) {
    const catalog: string = body.catalog ?? options.catalog;
    const schema: string | undefined = body.schema ?? options.schema;
    if (catalog !== options.catalog) throw new StatementFailure(`[NO_SUCH_CATALOG_EXCEPTION] Catalog '${catalog}' was not found. Please verify the catalog name and then retry the query or command again. SQLSTATE: 42704`);
    if (schema !== undefined && schema !== options.schema) throw new StatementFailure(`[SCHEMA_NOT_FOUND] The schema \`${catalog}\`.\`${schema}\` cannot be found. SQLSTATE: 42704`);
    const resolve = (parts: string[]): string => {
      const lower = parts.map((p) => p.toLowerCase());
      if (lower.length === 3 && lower[1] === 'information_schema' && lower[2] === 'columns') {
        if (lower[0] !== options.catalog) throw new StatementFailure(`[NO_SUCH_CATALOG_EXCEPTION] Catalog '${parts[0]}' was not found. SQLSTATE: 42704`);
        return `(SELECT '${options.catalog}' AS table_catalog, '${options.schema}' AS table_schema, table_name, column_name, ordinal_position, data_type, is_nullable FROM ${COLUMNS_TABLE})`;
      }
      const t = parts[parts.length - 1]!;
      if (t === '__changes' && parts.length === 1) return '"__changes"'; // the change feed's log (standin-changes.ts)
      const s = parts.length >= 2 ? parts[parts.length - 2] : schema;
      const c = parts.length === 3 ? parts[0] : catalog;
      const full = `\`${c}\`.\`${s ?? ''}\`.\`${t}\``;
      if (c !== options.catalog || s !== options.schema || !tableExists(t)) {
        throw new StatementFailure(`[TABLE_OR_VIEW_NOT_FOUND] The table or view ${full} cannot be found. Verify the spelling and correctness of the schema and catalog. SQLSTATE: 42P01`);
      }
      if (user.canSelect === false) throw new StatementFailure(`[INSUFFICIENT_PERMISSIONS] Insufficient privileges: User does not have SELECT on Table '${c}.${s}.${t}'. SQLSTATE: 42501`);
      return `"${t.replaceAll('"', '""')}"`;
    };
    const db = new Database(options.dbPath, { readonly: true, fileMustExist: true });
    try {
      db.function('TO_JSON', (v: unknown) => (v === null ? null : typeof v === 'string' ? v : String(v)));
      const params: Record<string, unknown> = {};
      for (const p of (body.parameters ?? []) as { name: string; value?: string | null; type?: string }[]) params[p.name] = parameterValue(p);
      const { statement, tables: changeTables } = rewriteChangeFeed(String(body.statement ?? ''), db, params);
      const sql = toSqlite(translate(statement, resolve), (head) => db.prepare(head).columns().map((c) => c.name));
      const stmt = db.prepare(sql).raw(true).safeIntegers(true);
      if (!stmt.reader) throw new StatementFailure('The stand-in runs SELECT statements only');
      // A change read's own parameter was consumed by the rewrite; SQLite refuses unused named binds.
      for (const name of Object.keys(params)) if (!sql.includes(`:${name}`) && !sql.includes(`@${name}`)) delete params[name];
      const sample = stmt.get(params) as unknown[] | undefined;
      const columns = stmt.columns().map((c, i): Column => {
        const declared = c.table && c.column ? dataType(c.table, c.column) : changeTables.map((t) => dataType(t, c.name)).find((d) => d !== undefined);
        const text = declared ?? inferType(sample?.[i]);
        return { name: c.name, type_text: text, type_name: TYPE_NAME[text] ?? text.replace(/[<(].*$/, '') };
      });
      const total = Number(db.prepare(`SELECT COUNT(*) FROM (${stmt.source})`).pluck().safeIntegers(false).get(params));
      return { db, stmt, params, columns, total };
    } catch (err) {
      db.close();
      if (err instanceof StatementFailure) throw err;
      if (err instanceof StandinChangeFeedError) throw new StatementFailure(err.message);
      const msg = err instanceof Error ? err.message : String(err);
      const col = /no such column: (.+)$/.exec(msg);
      throw new StatementFailure(col ? `[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name \`${col[1]}\` cannot be resolved. SQLSTATE: 42703` : `[PARSE_SYNTAX_ERROR] Syntax error: ${msg}. SQLSTATE: 42601`);
    }
  }

  function chunk(st: Statement, index: number): object {
    if (st.last?.index === index) return st.last.body;
    if (index !== st.next || !st.iter) {
      st.iter?.return?.();
      st.iter = st.stmt.iterate(st.params) as IterableIterator<unknown[]>;
      for (let k = 0; k < index * chunkRows; k++) if (st.iter.next().done) break;
    }
    const rows: unknown[][] = [];
    while (rows.length < chunkRows) {
      const r = st.iter.next();
      if (r.done) break;
      rows.push(r.value);
    }
    st.next = index + 1;
    const chunks = Math.ceil(st.total / chunkRows);
    const more = index + 1 < chunks;
    stats.chunks.push({ id: st.id, index, rows: rows.length, at: Date.now() });
    const body = {
      chunk_index: index,
      row_offset: index * chunkRows,
      row_count: rows.length,
      data_array: rows.map((r) => r.map((v, i) => encode(st.columns[i]!.type_text, v))),
      ...(more ? { next_chunk_index: index + 1, next_chunk_internal_link: `/api/2.0/sql/statements/${st.id}/result/chunks/${index + 1}` } : {}),
    };
    st.last = { index, body };
    if (!more) finish(st);
    return body;
  }

  function response(st: Statement): object {
    if (st.cancelled) return { statement_id: st.id, status: { state: 'CANCELED' } };
    if (Date.now() < st.readyAt) return { statement_id: st.id, status: { state: 'RUNNING' } };
    const chunks = Math.ceil(st.total / chunkRows);
    return {
      statement_id: st.id,
      status: { state: 'SUCCEEDED' },
      manifest: {
        format: 'JSON_ARRAY',
        schema: { column_count: st.columns.length, columns: st.columns.map((c, i) => ({ ...c, position: i })) },
        total_chunk_count: chunks,
        total_row_count: st.total,
        chunks: Array.from({ length: chunks }, (_, i) => ({ chunk_index: i, row_offset: i * chunkRows, row_count: Math.min(chunkRows, st.total - i * chunkRows) })),
        truncated: false,
      },
      result: chunks > 0 ? chunk(st, 0) : { chunk_index: 0, row_offset: 0, row_count: 0 },
    };
  }

  async function wait(st: Statement, ms: number) {
    const until = Date.now() + Math.max(0, Math.min(ms, maxWaitMs, st.readyAt - Date.now()));
    while (Date.now() < until && !st.cancelled) await new Promise((r) => setTimeout(r, Math.min(25, until - Date.now())));
  }

  async function route(req: http.IncomingMessage, url: URL): Promise<[number, object]> {
    const user = authorize(req);
    const path = url.pathname;
    if (req.method === 'POST' && path === '/api/2.0/sql/statements') {
      const body = JSON.parse((await readBody(req)) || '{}') as Record<string, any>;
      if (body.warehouse_id !== options.warehouseId) throw new HttpError(404, 'RESOURCE_DOES_NOT_EXIST', `SQL warehouse ${String(body.warehouse_id)} does not exist.`);
      if (user.canUseWarehouse === false) throw new HttpError(403, 'PERMISSION_DENIED', `User ${user.name} does not have permission to use SQL warehouse ${options.warehouseId} (CAN USE).`);
      if ((body.disposition ?? 'INLINE') !== 'INLINE' || (body.format ?? 'JSON_ARRAY') !== 'JSON_ARRAY') throw new HttpError(400, 'INVALID_PARAMETER_VALUE', 'The stand-in serves disposition INLINE with format JSON_ARRAY only');
      const logged: DatabricksStandinStats['statements'][number] = { statement: String(body.statement), catalog: body.catalog, schema: body.schema, parameters: body.parameters ?? [] };
      stats.statements.push(logged);
      const id = crypto.randomUUID();
      logged.id = id;
      let prepared;
      try {
        prepared = prepare(body, user);
      } catch (err) {
        if (!(err instanceof StatementFailure)) throw err;
        logged.state = 'FAILED';
        logged.error = err.message;
        return [200, { statement_id: id, status: { state: 'FAILED', error: { error_code: 'BAD_REQUEST', message: err.message } } }];
      }
      const st: Statement = { id, ...prepared, readyAt: Date.now() + queryDelayMs, cancelled: false, next: 0 };
      statements.set(id, st);
      const waitMs = /^(\d+)s$/.exec(String(body.wait_timeout ?? '10s'))?.[1];
      await wait(st, Number(waitMs ?? 10) * 1000);
      logged.state = 'SUCCEEDED';
      return [200, response(st)];
    }
    const m = /^\/api\/2\.0\/sql\/statements\/([^/]+)(\/cancel|\/result\/chunks\/(\d+))?$/.exec(path);
    const st = m ? statements.get(m[1]!) : undefined;
    if (!m || !st) throw new HttpError(404, 'RESOURCE_DOES_NOT_EXIST', `Not found: ${req.method} ${path}`);
    if (req.method === 'POST' && m[2] === '/cancel') {
      stats.cancels.push(st.id);
      if (Date.now() < st.readyAt) st.cancelled = true;
      finish(st);
      return [200, {}];
    }
    if (req.method === 'GET' && m[3] !== undefined) {
      if (st.cancelled) throw new HttpError(400, 'INVALID_PARAMETER_VALUE', `Statement ${st.id} was canceled`);
      return [200, chunk(st, Number(m[3]))];
    }
    if (req.method === 'GET' && m[2] === undefined) return [200, response(st)];
    throw new HttpError(404, 'ENDPOINT_NOT_FOUND', `No API found for '${req.method} ${path}'`);
  }

  const server = http.createServer((req, res) => {
    route(req, new URL(req.url ?? '/', 'http://standin')).then(
      ([status, body]) => send(res, status, body),
      (err: unknown) => {
        if (err instanceof HttpError) send(res, err.status, { error_code: err.code, message: err.message });
        else send(res, 500, { error_code: 'INTERNAL_ERROR', message: err instanceof Error ? err.message : String(err) });
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}`,
    stats: () => structuredClone(stats),
    setQueryDelay: (ms) => {
      queryDelayMs = ms;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const st of statements.values()) finish(st);
      meta.close();
    },
  };
}

function finish(st: Pick<Statement, 'iter' | 'db'>) {
  st.iter?.return?.();
  st.iter = undefined;
  if (st.db.open) st.db.close();
}

function inferType(v: unknown): string {
  if (typeof v === 'bigint') return 'BIGINT';
  if (typeof v === 'number') return Number.isInteger(v) ? 'BIGINT' : 'DOUBLE';
  return 'STRING';
}

function parameterValue(p: { value?: string | null; type?: string }): unknown {
  if (p.value === null || p.value === undefined) return null;
  const type = (p.type ?? 'STRING').toUpperCase();
  if (type === 'BIGINT' || type === 'INT') return BigInt(p.value);
  if (type === 'DOUBLE' || type === 'FLOAT' || type.startsWith('DECIMAL')) return Number(p.value);
  if (type === 'TIMESTAMP' || type === 'TIMESTAMP_NTZ') {
    const v = p.value.replace(' ', 'T');
    return storedTime(Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? v : `${v}Z`));
  }
  return p.value;
}

/** A stored value as the JSON_ARRAY format sends it: a string (or null). */
function encode(typeText: string, v: unknown): string | null {
  if (v === null || v === undefined) return null;
  switch (typeText) {
    case 'BOOLEAN':
      return v === 1n || v === 1 || v === 'true' ? 'true' : 'false';
    case 'TIMESTAMP': {
      const s = String(v);
      const ms = Date.parse(`${s.replace(' ', 'T').slice(0, 23)}Z`);
      return Number.isFinite(ms) ? new Date(ms).toISOString() : s;
    }
    default:
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
  }
}

function send(res: http.ServerResponse, status: number, body: object) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

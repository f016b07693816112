/**
 * A local stand-in for the part of Snowflake's HTTP protocol that snowflake-sdk (v3) uses for
 * reading, so the connector can be tested through the real driver. The driver reaches it through
 * its `accessUrl` option (plain http on 127.0.0.1 is accepted by the driver). Shapes follow the
 * driver's source (lib/services/sf.js, lib/connection/statement.js, lib/connection/result/*):
 *
 * - `POST /session/v1/login-request`: password and key-pair (SNOWFLAKE_JWT, RS256, fingerprint
 *   checked against the user's public key) logins; refusals as Snowflake sends them (HTTP 200,
 *   `success:false`, codes 390100 / 390144 / 390189); a wrong account name gets HTTP 403, as an
 *   unknown account host does. Warehouse / database / schema / role from the login URL become the
 *   session's (an unknown warehouse or database leaves it NULL, as Snowflake does).
 * - `POST /queries/v1/query-request`: runs the statement on SQLite (see standin-sql.ts for the
 *   translation), answers in the JSON result format: `rowtype` metadata, the first rows inline in
 *   `rowset`, the rest as `chunks` (URLs + `qrmk`) that the driver downloads — gzipped, checked
 *   for the SSE-C key header — only when its row stream needs them (back-pressure is observable
 *   in `stats().chunkRequests`). Errors in Snowflake's shape (002003 missing object, 000904
 *   invalid identifier, 001003 syntax, 000606 no warehouse, 000604 cancelled).
 * - Long queries (`SYSTEM$WAIT(n)`) answer `333333` (in progress) with a `getResultUrl` after
 *   `inProgressAfterMs`; `GET /queries/{id}/result` polls. `POST /queries/{id}/abort-request` and
 *   `/queries/v1/abort-request` cancel.
 * - `POST /session?delete=true`, `/session/token-request` (renew), `/session/heartbeat`,
 *   `/telemetry/send`, `GET /monitoring/queries/{id}`.
 *
 * Not covered: Arrow results, PUT/GET file transfer and stage binds (array binds above the
 * threshold), multi-statement requests, async `asyncExec` submission, OAuth/SSO/MFA/PAT auth,
 * session-parameter changes (`ALTER SESSION`), `USE …`, query-context cache entries, real
 * privileges (a user can read every table), Snowflake SQL beyond what SQLite understands after
 * the small translation (no `::` casts, FLATTEN, LATERAL, semi-structured paths…), and identifier
 * case folding (names come back as declared in SQLite — as if every Snowflake identifier had been
 * created quoted). Results are materialised in SQLite temp tables until the session ends.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import Database from 'better-sqlite3';
import { applyQualify, render, StandinSqlError, translate, type SessionNames } from './standin-sql.js';
import { applyChanges, registerChangeFunctions, StandinChangeError } from './standin-changes.js';
import { encoderFor, LOGIN_PARAMETERS, makeRowType, parseStoredTime, RESULT_PARAMETERS, typeFromDeclared, typeFromValue, type RowType } from './standin-wire.js';

export interface StandinUser {
  username: string;
  password?: string;
  /** PEM public key for key-pair (JWT) logins. */
  publicKeyPem?: string;
  /** Roles granted; the first is the default role. */
  roles?: string[];
  defaultWarehouse?: string;
}

export interface StandinOptions {
  /** The SQLite file holding the tables (created with Snowflake type names; see standin-wire.ts). */
  dbPath: string;
  users: StandinUser[];
  /** When set, a login for another account name gets HTTP 403. */
  account?: string;
  warehouses?: string[];
  database?: string;
  schema?: string;
  /** Rows sent inline with the query response (Snowflake's first chunk). */
  inlineRows?: number;
  /** Rows per downloadable chunk. */
  chunkRows?: number;
  /** A query still running after this long is answered "in progress" (Snowflake: ~45 s). */
  inProgressAfterMs?: number;
  host?: string;
  port?: number;
}

export interface StandinStats {
  logins: number;
  failedLogins: { username: string; code: string }[];
  queries: { queryId: string; sqlText: string; status: QueryStatus; rows?: number; error?: string }[];
  chunkRequests: { queryId: string; index: number; at: number }[];
  aborts: string[];
  sessionsOpen: number;
  sessionsClosed: number;
  telemetry: number;
}

export interface StandinHandle {
  url: string;
  stats(): StandinStats;
  close(): Promise<void>;
}

type QueryStatus = 'RUNNING' | 'SUCCESS' | 'FAILED_WITH_ERROR' | 'ABORTED';

interface Session {
  id: number;
  token: string;
  masterToken: string;
  names: SessionNames;
  results: Set<string>;
}

interface QueryResult {
  table: string;
  rowtype: RowType[];
  total: number;
  qrmk: string;
}

interface Query {
  id: string;
  requestId: string;
  session: Session;
  sqlText: string;
  status: QueryStatus;
  result?: QueryResult;
  error?: { code: string; sqlState: string; message: string };
  done: Promise<void>;
  finish: () => void;
  timer?: NodeJS.Timeout;
}

class GsError extends Error {
  constructor(
    readonly code: string,
    readonly sqlState: string,
    message: string,
  ) {
    super(message);
  }
}

export async function startSnowflakeStandin(options: StandinOptions): Promise<StandinHandle> {
  const db = new Database(options.dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  registerFunctions(db);
  const database = (options.database ?? 'ANALYTICS').toUpperCase();
  const schema = (options.schema ?? 'PUBLIC').toUpperCase();
  const warehouses = (options.warehouses ?? ['COMPUTE_WH']).map((w) => w.toUpperCase());
  const inlineRows = options.inlineRows ?? 1000;
  const chunkRows = options.chunkRows ?? 10_000;
  const inProgressAfterMs = options.inProgressAfterMs ?? 45_000;

  const sessions = new Map<string, Session>();
  const masterTokens = new Map<string, Session>();
  const queries = new Map<string, Query>();
  let nextSession = 1;
  let nextResult = 1;
  const stats: StandinStats = { logins: 0, failedLogins: [], queries: [], chunkRequests: [], aborts: [], sessionsOpen: 0, sessionsClosed: 0, telemetry: 0 };
  let baseUrl = '';

  // ---- login ------------------------------------------------------------------------------------
  function login(url: URL, body: any): { status: number; json: unknown } {
    const data = body?.data ?? {};
    const account = String(data.ACCOUNT_NAME ?? '');
    if (options.account && account.toUpperCase() !== options.account.toUpperCase()) {
      return { status: 403, json: { message: 'Forbidden' } };
    }
    const username = String(data.LOGIN_NAME ?? '');
    const user = options.users.find((u) => u.username.toUpperCase() === username.toUpperCase());
    const refuse = (code: string, message: string) => {
      stats.failedLogins.push({ username, code });
      return { status: 200, json: { data: { nextAction: 'RETRY_LOGIN', authnMethod: data.AUTHENTICATOR ?? 'PASSWORD', loginName: username }, code, message, success: false, headers: null } };
    };
    if (data.AUTHENTICATOR === 'SNOWFLAKE_JWT') {
      if (!user?.publicKeyPem || !verifyJwt(String(data.TOKEN ?? ''), account, username, user.publicKeyPem)) return refuse('390144', 'JWT token is invalid.');
    } else if (!user || user.password === undefined || !safeEqual(String(data.PASSWORD ?? ''), user.password)) {
      return refuse('390100', 'Incorrect username or password was specified.');
    }
    const roles = (user!.roles ?? ['PUBLIC']).map((r) => r.toUpperCase());
    const askedRole = url.searchParams.get('roleName');
    if (askedRole && !roles.includes(askedRole.toUpperCase())) {
      return refuse('390189', `Role '${askedRole.toUpperCase()}' specified in the connect string is not granted to this user. Contact your local system administrator, or attempt to login with another role, e.g. PUBLIC.`);
    }
    const wh = (url.searchParams.get('warehouse') ?? user!.defaultWarehouse ?? '').toUpperCase();
    const dbName = (url.searchParams.get('databaseName') ?? database).toUpperCase();
    const scName = (url.searchParams.get('schemaName') ?? schema).toUpperCase();
    const session: Session = {
      id: nextSession++,
      token: `ST-${crypto.randomBytes(16).toString('hex')}`,
      masterToken: `MT-${crypto.randomBytes(16).toString('hex')}`,
      names: {
        warehouse: warehouses.includes(wh) ? wh : null,
        database: dbName === database ? database : null,
        schema: dbName === database && scName === schema ? schema : null,
        role: askedRole ? askedRole.toUpperCase() : roles[0]!,
        user: user!.username,
      },
      results: new Set(),
    };
    sessions.set(session.token, session);
    masterTokens.set(session.masterToken, session);
    stats.logins++;
    stats.sessionsOpen++;
    return {
      status: 200,
      json: {
        data: {
          masterToken: session.masterToken,
          token: session.token,
          validityInSeconds: 3600,
          masterValidityInSeconds: 14400,
          displayUserName: user!.username.toUpperCase(),
          serverVersion: '8.0.0-standin',
          firstLogin: false,
          remMeToken: null,
          remMeValidityInSeconds: 0,
          healthCheckInterval: 45,
          newClientForUpgrade: null,
          sessionId: session.id,
          parameters: LOGIN_PARAMETERS,
          sessionInfo: { databaseName: session.names.database, schemaName: session.names.schema, warehouseName: session.names.warehouse, roleName: session.names.role },
          idToken: null,
          idTokenValidityInSeconds: 0,
          responseData: null,
          mfaToken: null,
          mfaTokenValidityInSeconds: 0,
        },
        code: null,
        message: null,
        success: true,
      },
    };
  }

  // ---- queries ----------------------------------------------------------------------------------
  function submit(session: Session, requestId: string, body: any): Query {
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    const query: Query = { id: crypto.randomUUID(), requestId, session, sqlText: String(body?.sqlText ?? ''), status: 'RUNNING', done, finish };
    queries.set(query.id, query);
    const entry: StandinStats['queries'][number] = { queryId: query.id, sqlText: query.sqlText, status: 'RUNNING' };
    stats.queries.push(entry);
    const settle = () => {
      entry.status = query.status;
      entry.rows = query.result?.total;
      entry.error = query.error?.message;
      query.finish();
    };
    try {
      const t = translate(query.sqlText, session.names);
      if (t.readsTables && !session.names.warehouse) {
        throw new GsError('000606', '57P03', "No active warehouse selected in the current session.  Select an active warehouse with the 'use warehouse' command.");
      }
      if (t.readsTables && (!session.names.database || !session.names.schema)) {
        throw new GsError('090105', '22000', "Cannot perform SELECT. This session does not have a current database. Call 'USE DATABASE', or use a qualified name.");
      }
      const binds = bindValues(body?.bindings);
      const run = () => {
        query.timer = undefined;
        if (query.status !== 'RUNNING') return;
        try {
          query.result = execute(session, t.tokens, binds);
          query.status = 'SUCCESS';
        } catch (err) {
          query.error = gsError(err);
          query.status = 'FAILED_WITH_ERROR';
        }
        settle();
      };
      // A LIMIT 0 statement (schema probe) returns its metadata without running the query body.
      if (t.waitMs > 0 && !/\bLIMIT\s+0\s*$/i.test(query.sqlText)) query.timer = setTimeout(run, t.waitMs);
      else run();
    } catch (err) {
      query.error = gsError(err);
      query.status = 'FAILED_WITH_ERROR';
      settle();
    }
    (query as { settle?: () => void }).settle = settle;
    return query;
  }

  function abort(query: Query) {
    stats.aborts.push(query.id);
    if (query.status !== 'RUNNING') return;
    if (query.timer) clearTimeout(query.timer);
    query.status = 'ABORTED';
    query.error = { code: '000604', sqlState: '57014', message: 'SQL execution canceled' };
    (query as { settle?: () => void }).settle?.();
  }

  function execute(session: Session, tokens: ReturnType<typeof translate>['tokens'], binds: Record<string, unknown>): QueryResult {
    const sql = applyQualify(applyChanges(tokens, db, binds), (head) => db.prepare(head).columns().map((c) => c.name));
    const stmt = db.prepare(sql);
    if (!stmt.reader) throw new GsError('001003', '42000', 'SQL compilation error:\nonly queries are supported by the stand-in');
    const table = `r_${nextResult++}`;
    db.prepare(`CREATE TEMP TABLE "${table}" AS ${sql}`).run(binds);
    session.results.add(table);
    const total = Number((db.prepare(`SELECT count(*) AS n FROM temp."${table}"`).get() as { n: number }).n);
    const columns = stmt.columns();
    const stored = db.prepare(`SELECT * FROM temp."${table}" LIMIT 0`).columns();
    const rowtype = columns.map((c, i) => {
      const where = { database: session.names.database ?? '', schema: session.names.schema ?? '', table: c.table ?? '' };
      let info = typeFromDeclared(c.type);
      if (!info) {
        // An expression: type it by its first non-null value, as the nearest Snowflake type.
        const col = quoteName(stored[i]?.name ?? c.name);
        const row = db.prepare(`SELECT ${col} FROM temp."${table}" WHERE ${col} IS NOT NULL LIMIT 1`).raw(true).safeIntegers(true).get() as unknown[] | undefined;
        info = typeFromValue(row?.[0] ?? null);
      }
      return makeRowType(c.name, info, nullableOf(c.table, c.column), where);
    });
    return { table, rowtype, total, qrmk: crypto.randomBytes(32).toString('base64') };
  }

  function nullableOf(table: string | null, column: string | null): boolean {
    if (!table || !column) return true;
    const info = db.prepare(`PRAGMA table_info(${quoteName(table)})`).all() as { name: string; notnull: number }[];
    const col = info.find((c) => c.name === column);
    return col ? col.notnull === 0 : true;
  }

  function rowsOf(result: QueryResult, from: number, count: number): string[] {
    const encoders = result.rowtype.map((rt) => encoderFor(rt));
    const stmt = db.prepare(`SELECT * FROM temp."${result.table}" WHERE rowid > ? ORDER BY rowid LIMIT ?`).raw(true).safeIntegers(true);
    return (stmt.all(from, count) as unknown[][]).map((row) => JSON.stringify(row.map((v, i) => encoders[i]!(v))));
  }

  function queryResponse(query: Query): unknown {
    if (query.status === 'RUNNING') {
      return {
        data: { queryId: query.id, getResultUrl: `/queries/${query.id}/result`, queryAbortsAfterSecs: 300, progressDesc: null },
        code: '333333',
        message: 'Asynchronous execution in progress. Use provided query id to perform query monitoring and management.',
        success: true,
      };
    }
    if (query.error) {
      const e = query.error;
      return {
        data: { internalError: false, errorCode: e.code, age: 0, sqlState: e.sqlState, queryId: query.id, line: -1, pos: -1, type: 'COMPILATION' },
        code: e.code,
        message: e.message,
        success: false,
        headers: null,
      };
    }
    const r = query.result!;
    const names = query.session.names;
    const inline = Math.min(inlineRows, r.total);
    const chunks = [];
    for (let start = inline, i = 0; start < r.total; start += chunkRows, i++) {
      const rowCount = Math.min(chunkRows, r.total - start);
      chunks.push({ url: `${baseUrl}/chunks/${query.id}/${i}`, rowCount, uncompressedSize: rowCount * 100, compressedSize: rowCount * 20 });
    }
    return {
      data: {
        parameters: RESULT_PARAMETERS,
        rowtype: r.rowtype,
        rowset: inline > 0 ? rowsOf(r, 0, inline).map((s) => JSON.parse(s)) : [],
        total: r.total,
        returned: r.total,
        queryId: query.id,
        databaseProvider: null,
        finalDatabaseName: names.database,
        finalSchemaName: names.schema,
        finalWarehouseName: names.warehouse,
        finalRoleName: names.role,
        numberOfBinds: 0,
        arrayBindSupported: false,
        statementTypeId: 4096,
        version: 1,
        sendResultTime: Date.now(),
        queryResultFormat: 'json',
        ...(chunks.length > 0 ? { chunks, qrmk: r.qrmk } : {}),
      },
      code: null,
      message: null,
      success: true,
    };
  }

  /** Waits for the query up to inProgressAfterMs, then answers (final or "in progress"). */
  async function answerWhenReady(query: Query): Promise<unknown> {
    if (query.status === 'RUNNING') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([query.done, new Promise<void>((r) => (timer = setTimeout(r, inProgressAfterMs)))]);
      clearTimeout(timer);
    }
    return queryResponse(query);
  }

  function closeSession(session: Session) {
    sessions.delete(session.token);
    masterTokens.delete(session.masterToken);
    for (const t of session.results) db.exec(`DROP TABLE IF EXISTS temp."${t}"`);
    session.results.clear();
    for (const q of queries.values()) if (q.session === session) queries.delete(q.id);
    stats.sessionsOpen--;
    stats.sessionsClosed++;
  }

  // ---- HTTP -------------------------------------------------------------------------------------
  const gone = { data: null, code: '390111', message: 'Session no longer exists.  New login required to access the service.', success: false, headers: null };

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://standin');
    const body = await readJson(req);
    const send = (status: number, json: unknown) => {
      const text = JSON.stringify(json);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const path = url.pathname;

    if (req.method === 'POST' && path === '/session/v1/login-request') {
      const { status, json } = login(url, body);
      return send(status, json);
    }
    const chunk = /^\/chunks\/([0-9a-f-]+)\/(\d+)$/.exec(path);
    if (req.method === 'GET' && chunk) {
      const query = queries.get(chunk[1]!);
      const index = Number(chunk[2]);
      if (!query?.result) return send(404, { message: 'NoSuchKey' });
      if (req.headers['x-amz-server-side-encryption-customer-key'] !== query.result.qrmk) return send(400, { message: 'missing or wrong SSE-C key' });
      stats.chunkRequests.push({ queryId: query.id, index, at: Date.now() });
      const start = Math.min(inlineRows, query.result.total) + index * chunkRows;
      const gz = zlib.gzipSync(Buffer.from(rowsOf(query.result, start, chunkRows).join(',')), { level: 1 });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'content-length': gz.length });
      res.end(gz);
      return;
    }
    if (req.method === 'POST' && path === '/session/token-request') {
      const session = masterTokens.get(tokenOf(req) ?? '');
      if (!session) return send(200, { ...gone, code: '390114', message: 'Master token expired.' });
      sessions.delete(session.token);
      session.token = `ST-${crypto.randomBytes(16).toString('hex')}`;
      sessions.set(session.token, session);
      return send(200, { data: { sessionToken: session.token, validityInSecondsST: 3600, masterToken: session.masterToken, validityInSecondsMT: 14400 }, code: null, message: null, success: true });
    }

    const session = sessions.get(tokenOf(req) ?? '');
    if (!session) return send(200, gone);

    if (req.method === 'POST' && path === '/queries/v1/query-request') {
      const query = submit(session, url.searchParams.get('requestId') ?? '', body);
      return send(200, await answerWhenReady(query));
    }
    const result = /^\/queries\/([0-9a-f-]+)\/result$/.exec(path);
    if (req.method === 'GET' && result) {
      const query = queries.get(result[1]!);
      if (!query) return send(200, { data: { queryId: result[1] }, code: '000709', message: `Statement ${result[1]} not found`, success: false });
      return send(200, await answerWhenReady(query));
    }
    const abortById = /^\/queries\/([0-9a-f-]+)\/abort-request$/.exec(path);
    if (req.method === 'POST' && (abortById || path === '/queries/v1/abort-request')) {
      const query = abortById ? queries.get(abortById[1]!) : [...queries.values()].find((q) => q.requestId === body?.requestId);
      if (query) abort(query);
      return send(200, { data: null, code: null, message: null, success: true });
    }
    const monitor = /^\/monitoring\/queries\/([0-9a-f-]+)$/.exec(path);
    if (req.method === 'GET' && monitor) {
      const query = queries.get(monitor[1]!);
      return send(200, { data: { queries: query ? [{ id: query.id, status: query.status, errorMessage: query.error?.message }] : [] }, code: null, message: null, success: true });
    }
    if (req.method === 'POST' && path === '/session' && url.searchParams.get('delete') === 'true') {
      closeSession(session);
      return send(200, { data: null, code: null, message: null, success: true });
    }
    if (req.method === 'POST' && path === '/session/heartbeat') return send(200, { data: null, code: null, message: null, success: true });
    if (req.method === 'POST' && path === '/telemetry/send') {
      stats.telemetry++;
      return send(200, { data: 'Log Received', code: null, message: null, success: true });
    }
    return send(404, { message: `stand-in does not implement ${req.method} ${path}` });
  }

  const server = http.createServer((req, res) => {
    route(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const addr = server.address() as AddressInfo;
  baseUrl = `http://${addr.address}:${addr.port}`;

  return {
    url: baseUrl,
    stats: () => structuredClone(stats),
    close: async () => {
      for (const q of queries.values()) if (q.timer) clearTimeout(q.timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
    },
  };
}

// ---- helpers ------------------------------------------------------------------------------------

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function tokenOf(req: http.IncomingMessage): string | undefined {
  return /^Snowflake Token="([^"]*)"$/.exec(req.headers.authorization ?? '')?.[1];
}

async function readJson(req: http.IncomingMessage): Promise<any> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  let buf = Buffer.concat(parts);
  if (buf.length === 0) return undefined;
  // The driver sets Content-Encoding: gzip from an async callback that races the send, so the
  // header does not say whether this body is compressed; the gzip magic number does.
  if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
  return JSON.parse(buf.toString('utf8'));
}

function safeEqual(a: string, b: string): boolean {
  const x = crypto.createHash('sha256').update(a).digest();
  const y = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(x, y);
}

/** Checks a key-pair login JWT: RS256 signature, `iss` = ACCOUNT.USER.SHA256:<fingerprint>, `sub`, expiry. */
function verifyJwt(token: string, account: string, username: string, publicKeyPem: string): boolean {
  const [h, p, s] = token.split('.');
  if (!h || !p || !s) return false;
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    if (header.alg !== 'RS256') return false;
    const key = crypto.createPublicKey(publicKeyPem);
    const fingerprint = `SHA256:${crypto.createHash('sha256').update(key.export({ format: 'der', type: 'spki' })).digest('base64')}`;
    const subject = `${account.toUpperCase()}.${username.toUpperCase()}`;
    if (payload.iss !== `${subject}.${fingerprint}` || payload.sub !== subject) return false;
    // The driver puts milliseconds in iat/exp.
    if (typeof payload.exp !== 'number' || payload.exp < Date.now()) return false;
    return crypto.verify('RSA-SHA256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'));
  } catch {
    return false;
  }
}

/** The driver's `bindings` map ({"1": {type, value}}) → SQLite named values ({p1: …}). */
function bindValues(bindings: Record<string, { type: string; value: string | null }> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, b] of Object.entries(bindings ?? {})) {
    const i = `p${Number(k)}`;
    const v = b.value;
    if (v === null) out[i] = null;
    else if (b.type === 'FIXED') out[i] = /^-?\d+$/.test(v) && !Number.isSafeInteger(Number(v)) ? BigInt(v) : Number(v);
    else if (b.type === 'REAL') out[i] = Number(v);
    else if (b.type === 'BOOLEAN') out[i] = v === 'true' ? 1 : 0;
    else out[i] = v;
  }
  return out;
}

function gsError(err: unknown): { code: string; sqlState: string; message: string } {
  if (err instanceof GsError || err instanceof StandinChangeError) return { code: err.code, sqlState: err.sqlState, message: err.message };
  const msg = err instanceof Error ? err.message : String(err);
  let m: RegExpExecArray | null;
  if ((m = /^OBJECT_MISSING (.+)$/.exec(msg)) || (m = /no such table: (?:\w+\.)?(.+)$/.exec(msg))) {
    return { code: '002003', sqlState: '42S02', message: `SQL compilation error:\nObject '${m[1]!.toUpperCase()}' does not exist or not authorized.` };
  }
  if ((m = /no such column: "?([^"]+)"?/.exec(msg))) {
    return { code: '000904', sqlState: '42000', message: `SQL compilation error: error line 1 at position 0\ninvalid identifier '${m[1]}'` };
  }
  if (err instanceof StandinSqlError || /syntax error|incomplete input/.test(msg)) {
    return { code: '001003', sqlState: '42000', message: `SQL compilation error:\n${msg}` };
  }
  return { code: '100000', sqlState: '22000', message: `SQL execution error: ${msg}` };
}

/** Snowflake conversion functions the connector emits, in the stand-in's storage format. */
function registerFunctions(db: Database.Database) {
  const toIso = (v: unknown) => {
    if (v === null || v === undefined) return null;
    const t = parseStoredTime(typeof v === 'number' && v < 1e11 ? v * 1000 : v);
    return t ? new Date(t.ms).toISOString() : null;
  };
  // (value [, scale]): a number with scale 3 is epoch milliseconds — what toIso takes numbers over 1e11 as.
  for (const name of ['TO_TIMESTAMP', 'TO_TIMESTAMP_NTZ', 'TO_TIMESTAMP_LTZ', 'TO_TIMESTAMP_TZ']) db.function(name, { deterministic: true, varargs: true }, (v: unknown) => toIso(v));
  registerChangeFunctions(db);
  db.function('TO_DATE', { deterministic: true }, (v: unknown) => (v === null ? null : String(toIso(typeof v === 'string' && v.length === 10 ? `${v}T00:00:00Z` : v)).slice(0, 10)));
  db.function('PARSE_JSON', { deterministic: true }, (v: unknown) => v);
  db.function('TO_VARCHAR', { deterministic: true, safeIntegers: true }, (v: unknown) => (v === null ? null : Buffer.isBuffer(v) ? v.toString('hex').toUpperCase() : String(v)));
}

export { render };

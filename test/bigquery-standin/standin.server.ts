/**
 * A local stand-in for the part of BigQuery's REST API (v2) that @google-cloud/bigquery uses for
 * reading, plus Google's OAuth token endpoint, so the connector is tested through the real client
 * (its `apiEndpoint`, and a key whose `token_uri` points here). Tables live in a SQLite file
 * (standin-wire.ts: storage and the REST value format; standin-sql.ts: GoogleSQL → SQLite).
 *
 * - `POST /token`: the JWT-bearer grant, checked as Google checks it (standin-auth.ts); every API
 *   call must carry a Bearer token it issued with a BigQuery scope, else 401 UNAUTHENTICATED.
 * - `POST /bigquery/v2/projects/{p}/queries` (jobs.query): GoogleSQL only, NAMED typed parameters,
 *   `defaultDataset`, `location` (a table read in another location than the dataset's is "Not
 *   found: Dataset … in location …"), `dryRun` (schema only), `maxResults` (first page inline),
 *   `timeoutMs` (waits for the job up to it, then `jobComplete:false`), `formatOptions`.
 * - `GET …/queries/{jobId}` (jobs.getQueryResults): pages by `pageToken` / `maxResults`, read
 *   lazily from SQLite (a page is produced only when asked for: back-pressure is observable in
 *   `stats().pages`); repeating the last page's token returns it again (client retries).
 * - `POST …/jobs/{jobId}/cancel` (jobs.cancel): a cancelled job answers "Job execution was
 *   cancelled" (400 stopped). `GET …/datasets/{d}` and `…/tables/{t}`: metadata and schemas.
 * - Grants: an account without jobUser gets 403 on jobs.query; without dataViewer, 403 on any
 *   table or dataset read.
 *
 * Not covered: jobs.insert / load / extract / DML, legacy SQL, positional parameters, the 10 MB
 * page cap, stateless queries (no job), the Storage Read API, sessions, views' own permissions,
 * row-level security, and GoogleSQL beyond what SQLite understands after the small translation.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { exchangeAssertion, type IssuedToken, type ServiceAccount } from './standin-auth.js';
import { bigQueryTables, InvalidQueryError, NotFoundError, toSqlite, translate } from './standin-sql.js';
import { encodeRow, ensureSchemaTable, inferType, parameterValue, SCHEMA_TABLE, tableSchema, type Field } from './standin-wire.js';

export interface BigQueryStandinOptions {
  dbPath: string;
  projectId: string;
  datasetId: string;
  /** The dataset's location (e.g. "EU"). */
  location: string;
  accounts: ServiceAccount[];
  /** At most this many rows per page, whatever `maxResults` asks (default 10000). */
  pageRows?: number;
  /** Cap on how long one call waits for a running job (BigQuery: `timeoutMs`, default 10 s). */
  maxWaitMs?: number;
  host?: string;
  port?: number;
}

export interface BigQueryStandinStats {
  tokensIssued: number;
  tokenRefusals: { error: string; description: string }[];
  unauthorized: number;
  queries: { jobId?: string; query: string; location?: string; dryRun: boolean; parameters: unknown[]; error?: string }[];
  pages: { jobId: string; offset: number; rows: number; at: number }[];
  cancels: string[];
}

export interface BigQueryStandinHandle {
  url: string;
  tokenUri: string;
  stats(): BigQueryStandinStats;
  /** Every job started from now on runs this long before it completes (for cancellation tests). */
  setQueryDelay(ms: number): void;
  close(): Promise<void>;
}

interface Job {
  id: string;
  location: string;
  db: Database.Database;
  stmt: Database.Statement;
  params: Record<string, unknown>;
  sourceFields: (Field | undefined)[];
  names: string[];
  readyAt: number;
  cancelled: boolean;
  failed?: string;
  iter?: IterableIterator<unknown[]>;
  offset: number;
  fields?: Field[];
  totalRows?: number;
  last?: { token: string | undefined; body: object };
  done: boolean;
}

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 500: 'INTERNAL' };

export async function startBigQueryStandin(options: BigQueryStandinOptions): Promise<BigQueryStandinHandle> {
  const meta = new Database(options.dbPath);
  meta.pragma('journal_mode = WAL');
  ensureSchemaTable(meta);
  const tokens = new Map<string, IssuedToken>();
  const jobs = new Map<string, Job>();
  let queryDelayMs = 0;
  const pageRows = options.pageRows ?? 10_000;
  const maxWaitMs = options.maxWaitMs ?? 10_000;
  const stats: BigQueryStandinStats = { tokensIssued: 0, tokenRefusals: [], unauthorized: 0, queries: [], pages: [], cancels: [] };
  let base = '';

  const tableExists = (name: string) => name !== SCHEMA_TABLE && meta.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;

  function authorize(req: http.IncomingMessage): ServiceAccount {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const t = m ? tokens.get(m[1]!) : undefined;
    if (!t || t.expiresAt < Date.now() || !t.scopes.some((s) => s === 'https://www.googleapis.com/auth/bigquery' || s === 'https://www.googleapis.com/auth/cloud-platform')) {
      stats.unauthorized += 1;
      throw new ApiError(401, 'authError', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
    }
    return t.account;
  }

  function checkProject(p: string) {
    if (p !== options.projectId) throw new ApiError(404, 'notFound', `Not found: Project ${p}`);
  }

  function denyTables(account: ServiceAccount, what: string) {
    if (account.dataViewer === false) throw new ApiError(403, 'accessDenied', `Access Denied: ${what}: User does not have permission to query table ${what}, or perhaps it does not exist.`);
  }

  /** Prepares a GoogleSQL statement on its own read-only connection. */
  function prepare(body: Record<string, any>, account: ServiceAccount) {
    const requested = typeof body.location === 'string' ? body.location : undefined;
    let readsTables = false;
    const scope = {
      projectId: options.projectId,
      datasetId: options.datasetId,
      location: requested ?? options.location,
      defaultDataset: body.defaultDataset,
      tableExists: (name: string) => {
        readsTables = true;
        if (requested && requested.toLowerCase() !== options.location.toLowerCase()) {
          throw new NotFoundError(`Not found: Dataset ${options.projectId}:${options.datasetId} was not found in location ${requested}`);
        }
        denyTables(account, `Table ${options.projectId}:${options.datasetId}.${name}`);
        return tableExists(name);
      },
    };
    if (body.useLegacySql !== false) throw new ApiError(400, 'invalidQuery', 'The stand-in speaks GoogleSQL only: send useLegacySql=false');
    const db = new Database(options.dbPath, { readonly: true, fileMustExist: true });
    try {
      db.function('TO_JSON_STRING', (v: unknown) => (v === null ? 'null' : typeof v === 'string' ? JSON.stringify(v) : String(v)));
      const tokensOut = translate(String(body.query ?? ''), bigQueryTables(scope));
      const sql = toSqlite(tokensOut, (head) => db.prepare(head).columns().map((c) => c.name));
      const stmt = db.prepare(sql).raw(true).safeIntegers(true);
      if (!stmt.reader) throw new ApiError(400, 'invalidQuery', 'The stand-in runs SELECT statements only');
      const params: Record<string, unknown> = {};
      for (const p of (body.queryParameters ?? []) as { name: string; parameterType: { type: string }; parameterValue?: { value?: string } }[]) {
        if (!p.name) throw new ApiError(400, 'invalid', 'The stand-in supports NAMED parameters only');
        params[p.name] = parameterValue(p);
      }
      const sourceFields = stmt.columns().map((c) => (c.table && c.column ? tableSchema(meta, c.table)?.find((f) => f.name === c.column) : undefined));
      return { db, stmt, params, sourceFields, names: stmt.columns().map((c) => c.name), readsTables };
    } catch (err) {
      db.close();
      if (err instanceof ApiError) throw err;
      if (err instanceof NotFoundError) throw new ApiError(404, 'notFound', err.message);
      if (err instanceof InvalidQueryError) throw new ApiError(400, 'invalidQuery', err.message);
      const msg = err instanceof Error ? err.message : String(err);
      const col = /no such column: (.+)$/.exec(msg);
      throw new ApiError(400, 'invalidQuery', col ? `Unrecognized name: ${col[1]} at [1:1]` : `Syntax error: ${msg}`);
    }
  }

  /** The result schema: a table column's field (mode NULLABLE, as query results are), else inferred from the first rows. */
  function resultFields(job: Pick<Job, 'names' | 'sourceFields'>, sample: unknown[][]): Field[] {
    return job.names.map((name, i) => {
      const src = job.sourceFields[i];
      if (src) return { ...src, name, mode: src.mode === 'REPEATED' ? 'REPEATED' : 'NULLABLE' };
      return { name, type: inferType(sample.map((r) => r[i])), mode: 'NULLABLE' };
    });
  }

  function ref(job: Job) {
    return { projectId: options.projectId, jobId: job.id, location: job.location };
  }

  async function waitFor(job: Job, timeoutMs: unknown) {
    const wait = Math.min(typeof timeoutMs === 'number' || typeof timeoutMs === 'string' ? Number(timeoutMs) : 10_000, maxWaitMs, job.readyAt - Date.now());
    const until = Date.now() + Math.max(0, wait);
    while (Date.now() < until && !job.cancelled) await new Promise((r) => setTimeout(r, Math.min(50, until - Date.now())));
    if (job.cancelled) throw new ApiError(400, 'stopped', 'Job execution was cancelled: User requested cancellation');
    if (job.failed) throw new ApiError(400, 'invalidQuery', job.failed);
    return Date.now() >= job.readyAt;
  }

  /** One page from `token` (undefined: the start), produced now from the job's SQLite cursor. */
  function page(job: Job, token: string | undefined, maxResults: number | undefined, useInt64Timestamp: boolean, kind: string): object {
    if (job.last && job.last.token === token) return job.last.body;
    const want = token ? Number(token.replace(/^p/, '')) : 0;
    if (!Number.isSafeInteger(want) || want < 0) throw new ApiError(400, 'invalid', `Invalid page token: ${token}`);
    if (job.totalRows === undefined) {
      job.totalRows = Number((job.db.prepare(`SELECT COUNT(*) FROM (${job.stmt.source})`).pluck().safeIntegers(false).get(job.params) as number) ?? 0);
    }
    if (want !== job.offset || !job.iter) {
      job.iter = job.stmt.iterate(job.params) as IterableIterator<unknown[]>;
      job.offset = 0;
      job.done = false;
      for (; job.offset < want; job.offset++) if (job.iter.next().done) break;
    }
    const n = Math.min(maxResults ?? pageRows, pageRows);
    const rows: unknown[][] = [];
    while (rows.length < n) {
      const r = job.iter.next();
      if (r.done) {
        job.done = true;
        break;
      }
      rows.push(r.value);
    }
    job.fields ??= resultFields(job, rows);
    const start = job.offset;
    job.offset += rows.length;
    const more = !job.done && job.offset < job.totalRows;
    stats.pages.push({ jobId: job.id, offset: start, rows: rows.length, at: Date.now() });
    const body = {
      kind,
      schema: { fields: job.fields },
      jobReference: ref(job),
      totalRows: String(job.totalRows),
      ...(more ? { pageToken: `p${job.offset}` } : {}),
      rows: rows.map((r) => encodeRow(job.fields!, r, { useInt64Timestamp })),
      totalBytesProcessed: '0',
      jobComplete: true,
      cacheHit: false,
    };
    job.last = { token, body };
    if (!more) finish(job);
    return body;
  }

  async function route(req: http.IncomingMessage, url: URL): Promise<[number, object]> {
    const path = url.pathname;
    if (req.method === 'POST' && path === '/token') {
      const form = new URLSearchParams(await readBody(req));
      const grant = exchangeAssertion(form, options.accounts, `${base}/token`);
      if (!grant.ok) {
        stats.tokenRefusals.push({ error: grant.error, description: grant.description });
        return [400, { error: grant.error, error_description: grant.description }];
      }
      tokens.set(grant.token, grant.issued);
      stats.tokensIssued += 1;
      return [200, { access_token: grant.token, expires_in: 3599, token_type: 'Bearer' }];
    }
    const m = /^\/bigquery\/v2\/projects\/([^/]+)\/(.+)$/.exec(path);
    if (!m) throw new ApiError(404, 'notFound', `Not found: URL ${path}`);
    const account = authorize(req);
    const project = decodeURIComponent(m[1]!);
    const rest = m[2]!.split('/').map(decodeURIComponent);
    checkProject(project);

    if (req.method === 'POST' && rest.length === 1 && rest[0] === 'queries') {
      const body = JSON.parse((await readBody(req)) || '{}') as Record<string, any>;
      const logged: BigQueryStandinStats['queries'][number] = { query: String(body.query), location: body.location, dryRun: body.dryRun === true, parameters: body.queryParameters ?? [] };
      stats.queries.push(logged);
      try {
        if (account.jobUser === false) {
          throw new ApiError(403, 'accessDenied', `Access Denied: Project ${project}: User does not have bigquery.jobs.create permission in project ${project}.`);
        }
        const prepared = prepare(body, account);
        const location = prepared.readsTables ? options.location : (body.location ?? options.location);
        if (body.dryRun === true) {
          const sample: unknown[][] = [];
          for (const r of prepared.stmt.iterate(prepared.params) as IterableIterator<unknown[]>) {
            sample.push(r);
            if (sample.length >= 20) break;
          }
          const fields = resultFields(prepared, sample);
          prepared.db.close();
          return [200, { kind: 'bigquery#queryResponse', schema: { fields }, jobReference: { projectId: project, location }, totalBytesProcessed: '0', jobComplete: true, cacheHit: false }];
        }
        const job: Job = { id: `job_${crypto.randomBytes(12).toString('base64url')}`, location, ...prepared, readyAt: Date.now() + queryDelayMs, cancelled: false, offset: 0, done: false };
        jobs.set(job.id, job);
        logged.jobId = job.id;
        const ready = await waitFor(job, body.timeoutMs);
        if (!ready) return [200, { kind: 'bigquery#queryResponse', jobReference: ref(job), jobComplete: false }];
        const int64 = body.formatOptions?.useInt64Timestamp === true;
        return [200, page(job, undefined, body.maxResults === undefined ? undefined : Number(body.maxResults), int64, 'bigquery#queryResponse')];
      } catch (err) {
        logged.error = err instanceof Error ? err.message : String(err);
        throw err;
      }
    }
    if (req.method === 'GET' && rest.length === 2 && rest[0] === 'queries') {
      const job = jobs.get(rest[1]!);
      if (!job) throw new ApiError(404, 'notFound', `Not found: Job ${project}:${rest[1]}`);
      const loc = url.searchParams.get('location');
      if (loc && loc.toLowerCase() !== job.location.toLowerCase()) throw new ApiError(404, 'notFound', `Not found: Job ${project}:${loc}.${job.id}`);
      const ready = await waitFor(job, url.searchParams.get('timeoutMs') ?? undefined);
      if (!ready) return [200, { kind: 'bigquery#getQueryResultsResponse', jobReference: ref(job), jobComplete: false }];
      const maxResults = url.searchParams.get('maxResults');
      const int64 = url.searchParams.get('formatOptions.useInt64Timestamp') === 'true';
      return [200, page(job, url.searchParams.get('pageToken') ?? undefined, maxResults === null ? undefined : Number(maxResults), int64, 'bigquery#getQueryResultsResponse')];
    }
    if (req.method === 'POST' && rest.length === 3 && rest[0] === 'jobs' && rest[2] === 'cancel') {
      const job = jobs.get(rest[1]!);
      if (!job) throw new ApiError(404, 'notFound', `Not found: Job ${project}:${rest[1]}`);
      stats.cancels.push(job.id);
      if (!job.done && Date.now() < job.readyAt) job.cancelled = true;
      finish(job);
      return [200, { kind: 'bigquery#jobCancelResponse', job: { jobReference: ref(job), status: { state: 'DONE' } } }];
    }
    if (req.method === 'GET' && rest[0] === 'datasets' && (rest.length === 2 || (rest.length === 4 && rest[2] === 'tables'))) {
      const dataset = rest[1]!;
      if (dataset !== options.datasetId) throw new ApiError(404, 'notFound', `Not found: Dataset ${project}:${dataset}`);
      denyTables(account, `Dataset ${project}:${dataset}`);
      if (rest.length === 2) {
        return [200, { kind: 'bigquery#dataset', id: `${project}:${dataset}`, datasetReference: { projectId: project, datasetId: dataset }, location: options.location }];
      }
      const table = rest[3]!;
      const fields = tableExists(table) ? tableSchema(meta, table) : undefined;
      if (!fields) throw new ApiError(404, 'notFound', `Not found: Table ${project}:${dataset}.${table}`);
      const numRows = (meta.prepare(`SELECT COUNT(*) FROM "${table.replaceAll('"', '""')}"`).pluck().get() as number) ?? 0;
      return [200, { kind: 'bigquery#table', id: `${project}:${dataset}.${table}`, tableReference: { projectId: project, datasetId: dataset, tableId: table }, schema: { fields }, numRows: String(numRows), type: 'TABLE', location: options.location }];
    }
    throw new ApiError(404, 'notFound', `Not found: ${req.method} ${path}`);
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://standin');
    route(req, url).then(
      ([status, body]) => send(res, status, body),
      (err: unknown) => {
        if (err instanceof ApiError) {
          send(res, err.code, { error: { code: err.code, message: err.message, errors: [{ message: err.message, domain: 'global', reason: err.reason }], status: STATUS[err.code] ?? 'UNKNOWN' } });
        } else {
          const message = err instanceof Error ? err.message : String(err);
          send(res, 500, { error: { code: 500, message, errors: [{ message, domain: 'global', reason: 'backendError' }], status: 'INTERNAL' } });
        }
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const addr = server.address() as AddressInfo;
  base = `http://${addr.address}:${addr.port}`;
  return {
    url: base,
    tokenUri: `${base}/token`,
    stats: () => structuredClone(stats),
    setQueryDelay: (ms) => {
      queryDelayMs = ms;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const job of jobs.values()) finish(job);
      meta.close();
    },
  };
}

/** Ends a job's cursor and closes its connection (SQLite refuses to close under an open cursor). */
function finish(job: Pick<Job, 'iter' | 'db' | 'done'>) {
  job.iter?.return?.();
  job.iter = undefined;
  job.done = true;
  if (job.db.open) job.db.close();
}

function send(res: http.ServerResponse, status: number, body: object) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
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

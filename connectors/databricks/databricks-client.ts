/**
 * The SQL Statement Execution API over the built-in fetch: Bearer token, JSON bodies, and every
 * failure in words a data engineer acts on (WarehouseError; never the token). The host is checked
 * against the reach rules right before every request (fetch takes no agent with our lookup).
 */
import type { ReachGuard } from '../reach.js';
import { WarehouseError, WarehouseReadAborted } from '../warehouse.js';

export const GRANTS_HINT =
  'the token\'s user or service principal needs CAN USE on the SQL warehouse, USE CATALOG and USE SCHEMA on the catalog and schema, and SELECT on the tables';

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

export interface ApiErrorBody {
  error_code?: string;
  message?: string;
}

/** A statement's failure (`status.error`) in words: a missing table, a missing grant, bad SQL. */
export function statementError(error: ApiErrorBody | undefined): WarehouseError {
  const message = (error?.message ?? 'the statement failed').slice(0, 500);
  if (/TABLE_OR_VIEW_NOT_FOUND/.test(message)) return new WarehouseError(`table not found: ${message}`);
  if (/NO_SUCH_CATALOG|SCHEMA_NOT_FOUND/.test(message)) return new WarehouseError(`catalog or schema not found: ${message}`);
  if (/INSUFFICIENT_PERMISSIONS|PERMISSION_DENIED/.test(message) || error?.error_code === 'PERMISSION_DENIED') {
    return new WarehouseError(`permission denied: ${message} — ${GRANTS_HINT}`);
  }
  if (/CANCELED|CANCELLED/.test(error?.error_code ?? '')) return new WarehouseError(`the statement was cancelled: ${message}`, true);
  return new WarehouseError(`Databricks rejected the statement: ${message}`);
}

function httpError(status: number, body: ApiErrorBody | undefined, text: string): WarehouseError {
  const message = (body?.message ?? text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim()).slice(0, 300) || `HTTP ${status}`;
  if (status === 401 || (status === 403 && /token/i.test(message))) {
    return new WarehouseError(`Databricks refused the token (${message}): create a new personal access token, or check that it belongs to this workspace`);
  }
  if (status === 403) return new WarehouseError(`permission denied: ${message} — ${GRANTS_HINT}`);
  if (status === 404) return new WarehouseError(`not found: ${message} (check host and http_path)`);
  if (status === 429 || status >= 500) return new WarehouseError(`Databricks failed (${status}: ${message}); will retry`, true);
  return new WarehouseError(`Databricks rejected the request (${status}: ${message})`);
}

function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK.has(code) || code === 'ENOTFOUND')) return code;
  }
  return undefined;
}

export class StatementClient {
  constructor(
    private readonly base: URL,
    private readonly token: string,
    private readonly reach?: ReachGuard,
  ) {}

  async call<T>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new WarehouseReadAborted();
    if (this.reach) await this.reach.resolve(this.base.hostname, Number(this.base.port) || (this.base.protocol === 'https:' ? 443 : 80));
    let res: Response;
    try {
      res = await fetch(new URL(path, this.base), {
        method,
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        // A redirect would take the token elsewhere.
        redirect: 'error',
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw new WarehouseReadAborted();
      const code = networkCode(err);
      if (code === 'ENOTFOUND') throw new WarehouseError(`cannot reach Databricks: ${this.base.hostname} does not resolve (${code})`);
      // Not the error's message: fetch quotes a header it refuses, and the authorization header is the token.
      throw new WarehouseError(`cannot reach Databricks at ${this.base.origin} (${code ?? (err as Error).name}); will retry`, true);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = undefined;
    }
    if (!res.ok) throw httpError(res.status, json as ApiErrorBody | undefined, text);
    if (json === undefined) throw new WarehouseError(`Databricks answered ${path} with something that is not JSON`, true);
    return json as T;
  }
}

/**
 * BigQuery and token-endpoint failures in words a data engineer acts on (WarehouseError; never
 * the key, never a stack). Retryable: network trouble, 5xx, rate and quota limits; everything
 * else (a refused key, a missing grant, a missing table, invalid SQL) fails the run at once.
 */
import { WarehouseError, WarehouseReadAborted } from '../warehouse.js';

interface ApiLikeError {
  code?: number | string;
  status?: number;
  message?: string;
  errors?: { reason?: string; message?: string }[];
  response?: { status?: number; data?: { error?: unknown; error_description?: string } };
  config?: { url?: unknown };
}

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

export const GRANTS_HINT =
  'the service account needs roles/bigquery.jobUser (or bigquery.jobs.create) on the project and roles/bigquery.dataViewer on the dataset';

function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK.has(code) || code === 'ENOTFOUND')) return code;
  }
  return undefined;
}

/** A reach-rule refusal from inside the HTTP client (the guard's lookup tags it EREACH). */
function reachRefusal(err: unknown): WarehouseError | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof WarehouseError) return new WarehouseError(e.message, e.retryable);
    if ((e as { code?: unknown }).code === 'EREACH' && e instanceof Error) return new WarehouseError(e.message);
  }
  return undefined;
}

export function translateError(err: unknown, endpoint: string, what: string): Error {
  if (err instanceof WarehouseError || err instanceof WarehouseReadAborted) return err;
  const refused = reachRefusal(err);
  if (refused) return refused;
  const e = (err ?? {}) as ApiLikeError;
  const net = networkCode(err);
  if (net === 'ENOTFOUND') return new WarehouseError(`cannot reach BigQuery: the host of ${endpoint} does not resolve (${net})`, false);
  if (net) return new WarehouseError(`cannot reach BigQuery at ${endpoint} (${net}); will retry`, true);

  // The token exchange (google-auth-library): an OAuth error body such as {"error":"invalid_grant"}.
  const oauth = e.response?.data;
  if (oauth && typeof oauth.error === 'string') {
    const detail = oauth.error_description ? `${oauth.error}: ${oauth.error_description}` : oauth.error;
    if ((e.response?.status ?? 0) >= 500) return new WarehouseError(`the token endpoint failed (${detail}); will retry`, true);
    return new WarehouseError(
      `the service-account key was refused when exchanging it for an access token (${detail}): the key may be deleted or disabled, or belong to another account — create a new JSON key for the service account`,
    );
  }

  const status = typeof e.code === 'number' ? e.code : (e.status ?? e.response?.status);
  const reason = e.errors?.[0]?.reason;
  const message = (e.errors?.[0]?.message ?? e.message ?? String(err)).slice(0, 500);
  if (status === 401) return new WarehouseError(`BigQuery refused the credentials (${message})`);
  if (status === 403) {
    if (reason === 'rateLimitExceeded' || reason === 'quotaExceeded') return new WarehouseError(`BigQuery ${reason}: ${message}; will retry`, true);
    return new WarehouseError(`permission denied while ${what}: ${message} — ${GRANTS_HINT}`);
  }
  if (status === 404) {
    if (/^Not found: Table/i.test(message)) return new WarehouseError(`table not found: ${message.replace(/^Not found: Table\s*/i, '')}`);
    if (/^Not found: Dataset/i.test(message)) return new WarehouseError(`dataset not found: ${message.replace(/^Not found: Dataset\s*/i, '')} (check dataset, project_id and location)`);
    return new WarehouseError(`not found while ${what}: ${message}`);
  }
  if (status === 400) return new WarehouseError(`BigQuery rejected the query: ${message}`);
  if (typeof status === 'number' && (status >= 500 || status === 429)) return new WarehouseError(`BigQuery failed while ${what} (${status}: ${message}); will retry`, true);
  if (typeof status === 'number') return new WarehouseError(`BigQuery error while ${what} (${status}: ${message})`);
  return new WarehouseError(`BigQuery error while ${what}: ${message}`, true, { cause: err });
}

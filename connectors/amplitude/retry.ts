/** Backoff for the export client: exponential with jitter, `Retry-After` honoured, abortable. */

export interface RetryPolicy {
  /** Further attempts after the first (429, 5xx, network errors). */
  retries: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 6, baseMs: 1000, maxMs: 60_000 };

/** `Retry-After` as seconds or an HTTP date → ms to wait (undefined when absent or unreadable). */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** The wait before retry number `attempt` (1-based): the server's word when given, capped. */
export function backoffMs(policy: RetryPolicy, attempt: number, serverSays?: number, random = Math.random): number {
  if (serverSays !== undefined) return Math.min(serverSays, policy.maxMs * 5);
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Write access seen in the last second, per web app: the ingestion hot path then skips its three
 * account queries for a client that keeps sending. On SQLite those queries wait for the single
 * connection while a write transaction holds it, so without this every request's authentication
 * queued behind the inserts it was meant to overlap with (docs/performance.md). The cost: a
 * revoked account, a removed grant or a deleted project stops writing up to one second late
 * (docs/security.md). Keys are a sha256 of the credentials and project, never the secret.
 */
import { sha256Hex } from '../lib/secrets.js';
import type { ProjectAccess } from './auth-middleware.js';

export const RECENT_ACCESS_TTL_MS = 1000;
const MAX_ENTRIES = 10_000;

export class RecentAccess {
  private readonly entries = new Map<string, { access: ProjectAccess; expires: number }>();

  keyOf(authorization: string, projectId: string): string {
    return sha256Hex(`${authorization}\u0000${projectId}`);
  }

  get(key: string, now = Date.now()): ProjectAccess | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires > now) return hit.access;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, access: ProjectAccess, now = Date.now()): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { access, expires: now + RECENT_ACCESS_TTL_MS });
  }
}

const caches = new WeakMap<object, RecentAccess>();

/** The app's one cache, keyed by its deps object like the rate limiter. */
export function recentAccessOf(deps: object): RecentAccess {
  let c = caches.get(deps);
  if (!c) caches.set(deps, (c = new RecentAccess()));
  return c;
}

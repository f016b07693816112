/**
 * An outage of our own stores (the database in DATABASE_URL, the event store), told apart from
 * every other failure. A job that meets one waits it out without using an attempt
 * (jobs/worker-runtime.ts), a last attempt that meets one does not fail its run (endsRun in
 * src/runs/failure.ts), and an HTTP request that meets one is a 503 with Retry-After: an outage
 * of ours is no reason to make the user run an import again, nor a 500.
 *
 * A source's failures are never outages here: a warehouse or Amplitude that stays unreachable
 * (a wrong host, a firewall) must fail its run after the job's attempts, not wait forever. So the
 * error's shape only raises the suspicion — our own unavailable-store error, a connection-level
 * driver code on an error that no connector translated, or an error nobody classified at all
 * (the driver's "Connection terminated unexpectedly", when a server goes away mid-query, has no
 * code) — and the stores themselves confirm it (`select 1`, the event store's ping).
 */
import type { Db } from '../db/knex.js';
import { carriesVerdict, errorCode, looksLikeStoreOutage } from '../lib/error-codes.js';
import { withTimeout } from '../lib/with-timeout.js';
import type { EventStore } from './event-store.js';

/** Whether a failure is an outage of our own stores, confirmed by asking them. */
export type StoreOutageCheck = (err: unknown) => Promise<boolean>;

/** How long the stores get to answer the confirming probe. */
const PROBE_TIMEOUT_MS = 3000;

/**
 * Worth asking the stores about: what looks like an outage, or an error that carries no verdict
 * of anyone's — no type of ours, no source's `retryable`, no driver code.
 */
function worthProbing(err: unknown): boolean {
  if (looksLikeStoreOutage(err)) return true;
  return err instanceof Error && !carriesVerdict(err) && errorCode(err) === undefined;
}

/**
 * The check every run step gets (RunContext.storeOutage) and the HTTP error edge uses: suspicion
 * by shape, then a probe of both stores. Answers once per error object, so the handler (deciding
 * whether its run fails) and the runtime (deciding whether the attempt counts) always agree.
 */
export function storeOutageCheck(db: Db, events: EventStore): StoreOutageCheck {
  const verdicts = new WeakMap<object, Promise<boolean>>();
  const probe = async (): Promise<boolean> => {
    try {
      await withTimeout(Promise.all([db.raw('select 1'), events.ping()]), PROBE_TIMEOUT_MS);
      return false;
    } catch {
      return true;
    }
  };
  return (err) => {
    if (!worthProbing(err)) return Promise.resolve(false);
    const key = err as object; // worth probing: an Error
    let verdict = verdicts.get(key);
    if (!verdict) {
      verdict = probe();
      verdicts.set(key, verdict);
    }
    return verdict;
  };
}

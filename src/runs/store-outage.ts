/**
 * An outage of our own stores (the database in DATABASE_URL, the event store), told apart from
 * every other failure. A job that meets one waits it out without using an attempt
 * (jobs/worker-runtime.ts), and a last attempt that meets one does not fail its run (endsRun in
 * ./failure.ts): an outage of ours is no reason to make the user run an import again.
 *
 * A source's failures are never outages here: a warehouse or Amplitude that stays unreachable
 * (a wrong host, a firewall) must fail its run after the job's attempts, not wait forever. So the
 * error's shape only raises the suspicion — our own unavailable-store error, or a connection-level
 * driver code on an error that no connector translated — and the stores themselves confirm it
 * (`select 1`, the event store's ping) before a job waits on it.
 */
import type { Db } from '../db/knex.js';
import { looksLikeStoreOutage } from '../lib/error-codes.js';
import { withTimeout } from '../lib/with-timeout.js';
import type { EventStore } from '../store/event-store.js';

/** Whether a failure is an outage of our own stores, confirmed by asking them. */
export type StoreOutageCheck = (err: unknown) => Promise<boolean>;

/** How long the stores get to answer the confirming probe. */
const PROBE_TIMEOUT_MS = 3000;
/** The longest wait between two tries, as a multiple of the first. */
const MAX_WAIT_FACTOR = 12;

/**
 * The check every run step gets (RunContext.storeOutage): suspicion by shape, then a probe of
 * both stores. Answers once per error object, so the handler (deciding whether its run fails) and
 * the runtime (deciding whether the attempt counts) always agree.
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
    if (!looksLikeStoreOutage(err)) return Promise.resolve(false);
    if (typeof err !== 'object' || err === null) return probe();
    let verdict = verdicts.get(err);
    if (!verdict) {
      verdict = probe();
      verdicts.set(err, verdict);
    }
    return verdict;
  };
}

/**
 * How long a job waits before trying again after its `waits`-th outage in a row: the first wait,
 * doubling, at most 12× the first.
 */
export function outageWaitMs(firstMs: number, waits: number): number {
  return Math.min(firstMs * 2 ** Math.min(Math.max(0, waits), 10), firstMs * MAX_WAIT_FACTOR);
}

/**
 * Enqueues that give up waiting. The Redis clients retry every command until Redis answers
 * (maxRetriesPerRequest null, so a worker rides out a restart), which makes a plain enqueue
 * wait as long as Redis is down. A request that has already written its run to SQL must not:
 * it answers, and the reconciler enqueues the run once Redis is back. The abandoned add may
 * still land then; job ids are fixed per run, so it lands once.
 */
import { withTimeout } from '../lib/with-timeout.js';

export const ENQUEUE_TIMEOUT_MS = 5000;

/** `add`, or a rejection once `ms` have passed without it settling. */
export function enqueueWithin<T>(add: Promise<T>, ms = ENQUEUE_TIMEOUT_MS): Promise<T> {
  return withTimeout(add, ms);
}

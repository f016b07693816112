/**
 * Enqueues that give up waiting. The Redis clients retry every command until Redis answers
 * (maxRetriesPerRequest null, so a worker rides out a restart), which makes a plain enqueue
 * wait as long as Redis is down. A request that has already written its run to SQL must not:
 * it answers, and the reconciler enqueues the run once Redis is back. The abandoned add may
 * still land then; job ids are fixed per run, so it lands once.
 */
export const ENQUEUE_TIMEOUT_MS = 5000;

/** `add`, or a rejection once `ms` have passed without it settling. */
export async function enqueueWithin<T>(add: Promise<T>, ms = ENQUEUE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      add,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`enqueue timed out after ${ms} ms (is Redis reachable?)`)), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

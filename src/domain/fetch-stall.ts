/**
 * When a worker's fetch loop has stopped: BullMQ's Worker can stay "running" after a Redis
 * restart while its blocking connection never takes another job (taskforcesh/bullmq#4479,
 * #4585, #3185). From outside that looks like one thing: jobs wait in its queue, it has nothing
 * running, and it starts none. A healthy idle worker takes a waiting job within milliseconds
 * (its blocking read wakes on the queue's marker, or at the latest after drainDelay), so the
 * same picture held for the whole threshold means the loop is wedged.
 */

/** One look at a queue from one worker's side. */
export interface FetchObservation {
  at: number;
  /** The queue has jobs in `wait` or `prioritized` and is not paused. */
  waiting: boolean;
  /** This worker has no job of the queue running. */
  idle: boolean;
  /** How many jobs of the queue this worker has started so far (any change means it fetches). */
  started: number;
}

/** Since when the suspicious picture has held without a break. */
export interface StallStreak {
  since: number;
  started: number;
}

export function nextStallStreak(
  streak: StallStreak | null,
  o: FetchObservation,
  thresholdMs: number,
): { streak: StallStreak | null; wedged: boolean } {
  if (!o.waiting || !o.idle) return { streak: null, wedged: false };
  if (streak === null || streak.started !== o.started) return { streak: { since: o.at, started: o.started }, wedged: false };
  return { streak, wedged: o.at - streak.since >= thresholdMs };
}

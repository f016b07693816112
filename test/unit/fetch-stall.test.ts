import { describe, expect, it } from 'vitest';
import { nextStallStreak, type FetchObservation, type StallStreak } from '../../src/domain/fetch-stall.js';

/** Feeds observations in order; returns the index of the first one that said wedged, or -1. */
function firstWedged(observations: FetchObservation[], thresholdMs: number): number {
  let streak: StallStreak | null = null;
  for (const [i, o] of observations.entries()) {
    const next = nextStallStreak(streak, o, thresholdMs);
    if (next.wedged) return i;
    streak = next.streak;
  }
  return -1;
}

const look = (at: number, over: Partial<FetchObservation> = {}): FetchObservation => ({ at, waiting: true, idle: true, started: 0, ...over });

describe('nextStallStreak', () => {
  it('is wedged once jobs waited and the worker stayed idle, starting nothing, for the whole threshold', () => {
    expect(firstWedged([look(0), look(1000), look(2000), look(3000)], 3000)).toBe(3);
    expect(firstWedged([look(0), look(1000), look(2999)], 3000)).toBe(-1);
  });

  it('starts over whenever the picture breaks: nothing waiting, a job running, or a job started', () => {
    for (const breaker of [{ waiting: false }, { idle: false }, { started: 1 }]) {
      const obs = [look(0), look(1500, breaker), look(3000, 'started' in breaker ? breaker : {}), look(4000, 'started' in breaker ? breaker : {})];
      expect(firstWedged(obs, 3000)).toBe(-1);
    }
    // After the break the threshold counts from the first suspicious look again.
    expect(firstWedged([look(0), look(1500, { started: 1 }), look(3000, { started: 1 }), look(4500, { started: 1 })], 3000)).toBe(3);
  });
});

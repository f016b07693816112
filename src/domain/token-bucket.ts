/**
 * A token bucket as a value: `rate` tokens per second refill up to `burst`; taking `n` tokens
 * either succeeds or says how long until it would. Pure, so the web process owns the state and
 * tests own the clock.
 */
export interface Bucket {
  tokens: number;
  /** Epoch ms of the last refill. */
  at: number;
}

export interface BucketRules {
  /** Tokens added per second. */
  rate: number;
  /** Most tokens the bucket holds (and the largest single take that can ever succeed). */
  burst: number;
}

export type TakeOutcome = { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterMs: number };

export function fullBucket(rules: BucketRules, now: number): Bucket {
  return { tokens: rules.burst, at: now };
}

export function refill(bucket: Bucket, rules: BucketRules, now: number): Bucket {
  const elapsed = Math.max(0, now - bucket.at);
  return { tokens: Math.min(rules.burst, bucket.tokens + (elapsed * rules.rate) / 1000), at: Math.max(now, bucket.at) };
}

/**
 * Takes `n` tokens. A take larger than the burst is charged as the whole burst, so one big
 * request can still pass on a full bucket instead of being refused forever.
 */
export function take(bucket: Bucket, n: number, rules: BucketRules, now: number): TakeOutcome {
  const current = refill(bucket, rules, now);
  const cost = Math.min(Math.max(0, n), rules.burst);
  if (current.tokens >= cost) return { ok: true, bucket: { tokens: current.tokens - cost, at: current.at } };
  const retryAfterMs = rules.rate > 0 ? Math.ceil(((cost - current.tokens) * 1000) / rules.rate) : Number.POSITIVE_INFINITY;
  return { ok: false, bucket: current, retryAfterMs };
}

/**
 * Per-project ingestion rate limit (events per second, token bucket). The buckets live in this
 * web process — one limiter per app, shared by every ingestion router through `rateLimiterOf`.
 * Behind several web processes the effective limit is per process; that is deliberate (no Redis
 * round trip on the hot path) and documented in docs/ingestion.md.
 */
import type { Config } from '../../config/index.js';
import { fullBucket, take, type Bucket, type BucketRules } from '../domain/token-bucket.js';
import { ValidationError } from '../lib/errors.js';

const MAX_PROJECTS = 100_000;

export class ProjectRateLimiter {
  private readonly buckets = new Map<number, Bucket>();
  private readonly rules: BucketRules;

  constructor(config: Pick<Config, 'RATE_LIMIT_EVENTS_PER_SEC' | 'RATE_LIMIT_BURST'>) {
    const rate = config.RATE_LIMIT_EVENTS_PER_SEC;
    this.rules = { rate, burst: Math.max(config.RATE_LIMIT_BURST, 1) };
  }

  get enabled(): boolean {
    return this.rules.rate > 0;
  }

  /** Charges `events` to the project, or throws 429 with `Retry-After` (whole seconds, ≥ 1). */
  consume(projectId: number, events: number, now = Date.now()): void {
    if (!this.enabled || events <= 0) return;
    const outcome = take(this.buckets.get(projectId) ?? fullBucket(this.rules, now), events, this.rules, now);
    if (this.buckets.size >= MAX_PROJECTS && !this.buckets.has(projectId)) this.buckets.clear();
    this.buckets.set(projectId, outcome.bucket);
    if (!outcome.ok) {
      const seconds = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
      throw new ValidationError(429, `Too Many Requests: project ${projectId} is over its limit of ${this.rules.rate} events/s`, {
        headers: { 'Retry-After': String(seconds) },
      });
    }
  }
}

const limiters = new WeakMap<object, ProjectRateLimiter>();

/**
 * The app's one limiter, keyed by its deps object (createApp hands the same one to every
 * router), so /import, /track and any other ingestion router share the buckets.
 */
export function rateLimiterOf(deps: { config: Config }): ProjectRateLimiter {
  let limiter = limiters.get(deps);
  if (!limiter) {
    limiter = new ProjectRateLimiter(deps.config);
    limiters.set(deps, limiter);
  }
  return limiter;
}

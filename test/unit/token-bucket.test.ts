import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fullBucket, take } from '../../src/domain/token-bucket.js';
import { ProjectRateLimiter } from '../../src/http/rate-limit.js';

describe('token bucket', () => {
  const rules = { rate: 100, burst: 300 };

  it('allows the burst at once, then refills at the rate', () => {
    let b = fullBucket(rules, 0);
    const first = take(b, 300, rules, 0);
    expect(first.ok).toBe(true);
    b = first.bucket;
    const refused = take(b, 50, rules, 100); // 10 tokens back after 100 ms
    expect(refused).toEqual({ ok: false, bucket: { tokens: 10, at: 100 }, retryAfterMs: 400 });
    expect(take(refused.bucket, 50, rules, 500).ok).toBe(true);
  });

  it('charges a take larger than the burst as the whole burst', () => {
    expect(take(fullBucket(rules, 0), 10_000, rules, 0)).toEqual({ ok: true, bucket: { tokens: 0, at: 0 } });
  });

  it('never admits more than burst + rate × elapsed over any sequence of takes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 1000 })), { maxLength: 50 }), (steps) => {
        let b = fullBucket(rules, 0);
        let now = 0;
        let admitted = 0;
        for (const [n, dt] of steps) {
          now += dt;
          const out = take(b, n, rules, now);
          b = out.bucket;
          if (out.ok) admitted += n;
          else expect(out.retryAfterMs).toBeGreaterThan(0);
          expect(b.tokens).toBeGreaterThanOrEqual(0);
          expect(b.tokens).toBeLessThanOrEqual(rules.burst);
        }
        expect(admitted).toBeLessThanOrEqual(rules.burst + (rules.rate * now) / 1000 + 1e-6);
      }),
    );
  });
});

describe('ProjectRateLimiter', () => {
  it('429 with Retry-After in whole seconds, per project; 0 disables', () => {
    const limiter = new ProjectRateLimiter({ RATE_LIMIT_EVENTS_PER_SEC: 10, RATE_LIMIT_BURST: 20 });
    limiter.consume(1, 20, 0);
    limiter.consume(2, 20, 0);
    let err: unknown;
    try {
      limiter.consume(1, 15, 0);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ status: 429, details: { headers: { 'Retry-After': '2' } } });
    expect(() => limiter.consume(1, 15, 1500)).not.toThrow();
    const off = new ProjectRateLimiter({ RATE_LIMIT_EVENTS_PER_SEC: 0, RATE_LIMIT_BURST: 1 });
    expect(() => off.consume(1, 1e9)).not.toThrow();
  });
});

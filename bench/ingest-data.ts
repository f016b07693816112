/**
 * The bench's generated events: deterministic (same seed, same events in every measurement of a
 * run), ~15 properties each, the shape of a typical product event import.
 */
import zlib from 'node:zlib';

/** A small seeded generator (mulberry32): the same numbers in every run. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EVENTS = ['Page View', 'Sign Up', 'Purchase', 'Add To Cart', 'Search', 'Share', 'Login', 'Logout'];
const COUNTRIES = ['US', 'DE', 'FR', 'IN', 'BR', 'JP', 'GB', 'CA'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];

/** Distinct users of the generated events (each with two devices when `identity`). */
export const DEFAULT_USERS = 50_000;

export interface BenchEvent {
  event: string;
  properties: Record<string, unknown>;
}

/**
 * `n` events with 15 properties (time, distinct_id, $insert_id and 12 more), times in seconds.
 * With `identity`, each also carries ids as a browser SDK sends them (docs/identity.md): a third
 * anonymous (`$device_id` and distinct_id `$device:<id>`, as mixpanel-browser sends), the rest
 * identified (`$user_id` + `$device_id`, which links the device).
 */
export function generateEvents(n: number, seed = 42, identity = false, users = DEFAULT_USERS): BenchEvent[] {
  const r = rng(seed);
  const base = Math.floor(Date.now() / 1000) - 30 * 86_400;
  const out: BenchEvent[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const user = Math.floor(r() * users);
    out[i] = {
      event: EVENTS[i % EVENTS.length]!,
      properties: {
        time: base + Math.floor(r() * 29 * 86_400),
        distinct_id: `user-${user}`,
        $insert_id: `ins-${seed}-${i}`,
        $browser: BROWSERS[user % BROWSERS.length],
        $os: user % 2 ? 'Mac OS X' : 'Windows',
        mp_country_code: COUNTRIES[user % COUNTRIES.length],
        $current_url: `https://shop.example.com/p/${Math.floor(r() * 10_000)}`,
        plan: user % 3 ? 'pro' : 'free',
        price: Math.round(r() * 10_000) / 100,
        quantity: 1 + Math.floor(r() * 5),
        is_first: r() < 0.1,
        session_id: `s-${Math.floor(r() * 1e9).toString(36)}`,
        utm: { source: 'newsletter', campaign: `c${i % 17}` },
        tags: ['a', `t${i % 7}`],
      },
    };
    if (identity) {
      const props = out[i]!.properties;
      props.$device_id = `dev-${user}-${i % 2}`;
      if (i % 3 === 0) props.distinct_id = `$device:${props.$device_id}`;
      else props.$user_id = props.distinct_id;
    }
  }
  return out;
}

/** Splits into batches of `size`. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Each batch as the gzip of its JSON array, as an import client sends it. */
export function gzipBatches(events: readonly BenchEvent[], size: number): Buffer[] {
  return batches(events, size).map((b) => zlib.gzipSync(JSON.stringify(b), { level: 6 }));
}

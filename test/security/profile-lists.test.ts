/**
 * Hostile tenant, finding 5: /engage `$union` / `$append` / `$remove` on large lists blocked the
 * event loop for seconds. A list property holds at most MAX_LIST_ITEMS items (400 beyond, naming
 * the limit), and a full request of list operations on a full list finishes quickly while another
 * client keeps getting answers.
 */
import { describe, expect, it } from 'vitest';
import { findProfile } from '../../src/db/profiles.repo.js';
import { applyProfileOps, MAX_LIST_ITEMS } from '../../src/domain/profile-ops.js';
import { tenantApp } from './tenant-app.js';
import { whileProbing } from './latency-probe.js';

const item = (i: number) => ({ sku: `sku-${i}`, attrs: { colour: 'red', size: i % 7, tags: ['a', 'b', 'c'] } });

describe('profile list operations (domain)', () => {
  it('refuses to grow a list beyond the limit, and keeps the state from before the update', () => {
    const full = Array.from({ length: MAX_LIST_ITEMS }, (_, i) => i);
    const state = { properties: { l: full }, propertyTimes: {} };
    expect(applyProfileOps(state, [{ op: '$append', values: { l: 'x' } }], { time: 1 })).toMatchObject({ ok: false, message: expect.stringMatching(/1000 items/) });
    expect(applyProfileOps(state, [{ op: '$union', values: { l: ['new'] } }], { time: 1 })).toMatchObject({ ok: false });
    // A union that adds nothing new stays within the limit.
    expect(applyProfileOps(state, [{ op: '$union', values: { l: [1, 2] } }], { time: 1 })).toMatchObject({ ok: true });
    expect(state.properties.l).toHaveLength(MAX_LIST_ITEMS);
  });

  it('2000 list operations on a full list of objects stay well under a second', () => {
    let state = { properties: { l: Array.from({ length: MAX_LIST_ITEMS - 1 }, (_, i) => item(i)) as unknown[] }, propertyTimes: {} };
    const started = performance.now();
    for (let i = 0; i < 2000; i++) {
      const op = i % 3 === 0 ? { op: '$remove' as const, values: { l: item(i % 50) } } : i % 3 === 1 ? { op: '$union' as const, values: { l: [item(i % 50)] } } : { op: '$append' as const, values: { l: item(i % 50) } };
      const out = applyProfileOps(state, [op], { time: i });
      if (out.ok && out.state) state = out.state as typeof state;
    }
    const ms = performance.now() - started;
    expect(ms).toBeLessThan(1000);
  });
});

describe('profile list limits over /engage', () => {
  const w = tenantApp();
  // The slowest probe allowed. The probe shares this process with the client that builds the
  // request, and in CI the CPU with other test files: 640 ms was seen once. The blocking this
  // guards against took seconds.
  const PROBE_BOUND_MS = 1500;

  const engage = (updates: unknown[]) =>
    fetch(`${w.app.url}/engage?verbose=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(updates) });

  it('answers 400 naming the limit for a list longer than the limit, in any operator', async () => {
    const long = Array.from({ length: MAX_LIST_ITEMS + 1 }, (_, i) => i);
    for (const op of ['$union', '$set', '$append']) {
      const res = await engage([{ $token: w.p.token, $distinct_id: 'u1', [op]: { l: long } }]);
      expect(res.status, op).toBe(400);
      const body = (await res.json()) as { status: number; error: string };
      expect(body.status).toBe(0);
      expect(body.error).toMatch(/at most 1000 items/);
    }
    expect(await findProfile(w.t.db, w.p.id, { kind: 'user', distinctId: 'u1' })).toBeUndefined();
  });

  it('a 20,000-item list is refused up front, so 2000 unions into it never run', async () => {
    const huge = Array.from({ length: 20_000 }, (_, i) => item(i));
    const updates = [
      { $token: w.p.token, $distinct_id: 'huge', $set: { l: huge } },
      ...Array.from({ length: 1999 }, (_, i) => ({ $token: w.p.token, $distinct_id: 'huge', $union: { l: [item(i)] } })),
    ];
    const { result, worstMs } = await whileProbing(`${w.app.url}/healthz`, () => engage(updates));
    expect(result.status).toBe(400);
    expect(worstMs).toBeLessThan(PROBE_BOUND_MS);
  });

  it('a full request of list operations on a full list finishes fast, other clients keep being answered', async () => {
    const full = Array.from({ length: MAX_LIST_ITEMS - 10 }, (_, i) => item(i));
    expect((await engage([{ $token: w.p.token, $distinct_id: 'big', $set: { l: full } }])).status).toBe(200);
    const updates = Array.from({ length: 2000 }, (_, i) =>
      i % 2 === 0 ? { $token: w.p.token, $distinct_id: 'big', $union: { l: [item(i % 40)] } } : { $token: w.p.token, $distinct_id: 'big', $remove: { l: item(5000 + i) } },
    );
    const started = performance.now();
    const { result, worstMs } = await whileProbing(`${w.app.url}/healthz`, () => engage(updates));
    expect(result.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(worstMs).toBeLessThan(PROBE_BOUND_MS);
    const stored = await findProfile(w.t.db, w.p.id, { kind: 'user', distinctId: 'big' });
    expect((stored?.properties.l as unknown[]).length).toBe(MAX_LIST_ITEMS - 10);
  });
});

/**
 * Hostile tenant, finding 11: an unknown username answered faster than a wrong secret (no scrypt
 * for it), so response time told which service-account names exist. Unknown names are checked
 * against a dummy hash now: both cost one scrypt verification.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/accounts/authenticator.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

async function medianMs(n: number, f: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await f();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(n / 2)]!;
}

describe('authentication timing', () => {
  let t: TestDb;
  let p: SeededProject;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    p = await seedProject(t.db);
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('an unknown username costs as much as a wrong secret', async () => {
    const auth = new Authenticator(t.db);
    // Warm up both paths (the dummy hash is made once).
    await auth.authenticate({ username: 'nobody-warm', password: 'x' });
    await auth.authenticate({ username: p.sa.username, password: 'wrong' });
    const unknown = await medianMs(7, () => auth.authenticate({ username: `nobody-${Math.random()}`, password: 'guess' }));
    const wrong = await medianMs(7, () => auth.authenticate({ username: p.sa.username, password: 'guess' }));
    expect(await auth.authenticate({ username: 'nobody', password: 'guess' })).toBeUndefined();
    // Both are one scrypt verification (tens of ms); a bare lookup is well under a millisecond.
    expect(unknown).toBeGreaterThan(wrong * 0.5);
    expect(unknown).toBeLessThan(wrong * 2 + 20);
  });
});

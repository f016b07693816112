import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countProfiles, findProfile } from '../../src/db/profiles.repo.js';
import { applyGroupUpdates, applyProfileUpdates } from '../../src/ingest/profiles.ingest.js';
import { seedProject } from '../helpers/accounts.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const T = Date.UTC(2024, 4, 1);
const user = (distinctId: string) => ({ kind: 'user' as const, distinctId });

describe.each(dbKinds())('profile write path on %s', (kind) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb(kind);
  });
  afterAll(async () => t.destroy());

  it('applies every operator in order and stores the result', async () => {
    const p = await seedProject(t.db);
    const result = await applyProfileUpdates(
      t.db,
      p.id,
      [
        { $distinct_id: 'u1', $set: { plan: 'pro', name: 'Ada' }, $time: T },
        { $distinct_id: 'u1', $set_once: { first_seen: 'a', plan: 'never' }, $time: T },
        { $distinct_id: 'u1', $add: { logins: 2 }, $time: T },
        { $distinct_id: 'u1', $add: { logins: 3 }, $time: T },
        { $distinct_id: 'u1', $append: { pages: 'home' }, $time: T },
        { $distinct_id: 'u1', $append: { pages: 'docs' }, $time: T },
        { $distinct_id: 'u1', $union: { tags: ['a', 'b', 'a'] }, $time: T },
        { $distinct_id: 'u1', $union: { tags: ['b', 'c'] }, $time: T },
        { $distinct_id: 'u1', $remove: { tags: 'a', missing_list: 'x' }, $time: T },
        { $distinct_id: 'u1', $unset: ['name'], $time: T + 1 },
        { $distinct_id: 'u2', $set: { plan: 'free' }, $time: T },
        { $distinct_id: 'u2', $delete: '' },
      ],
      { now: T + 5 },
    );
    expect(result).toEqual({ received: 12, applied: 12, rejected: [] });
    const u1 = await findProfile(t.db, p.id, user('u1'));
    expect(u1?.properties).toEqual({
      plan: 'pro',
      first_seen: 'a',
      logins: 5,
      pages: ['home', 'docs'],
      tags: ['b', 'c'],
      $last_seen: new Date(T + 1).toISOString().slice(0, 19),
    });
    expect(u1?.propertyTimes).toMatchObject({ plan: T, name: T + 1 });
    expect(u1?.updatedAt).toBe(T + 5);
    expect(await findProfile(t.db, p.id, user('u2'))).toBeUndefined();
  });

  it('is latest-wins for $set under replay and out-of-order delivery', async () => {
    const p = await seedProject(t.db);
    await applyProfileUpdates(t.db, p.id, [{ $distinct_id: 'u', $set: { plan: 'enterprise', seats: 10 }, $time: T + 1000 }]);
    // An older batch arriving late (or replayed) does not overwrite newer values, but fills new ones.
    await applyProfileUpdates(t.db, p.id, [{ $distinct_id: 'u', $set: { plan: 'free', seats: 1, region: 'eu' }, $time: T }]);
    // Seconds are accepted too (below 1e11).
    await applyProfileUpdates(t.db, p.id, [{ $distinct_id: 'u', $set: { plan: 'team' }, $time: Math.floor(T / 1000) }]);
    expect((await findProfile(t.db, p.id, user('u')))?.properties).toMatchObject({ plan: 'enterprise', seats: 10, region: 'eu' });
    const replay = [{ $distinct_id: 'u', $set: { plan: 'enterprise', seats: 10 }, $time: T + 1000 }];
    await applyProfileUpdates(t.db, p.id, replay);
    await applyProfileUpdates(t.db, p.id, [{ $distinct_id: 'u', $set: { plan: 'pro' }, $time: T + 2000 }]);
    await applyProfileUpdates(t.db, p.id, replay);
    expect((await findProfile(t.db, p.id, user('u')))?.properties).toMatchObject({ plan: 'pro', seats: 10 });
  });

  it('rejects invalid updates by index, never half-applied, and applies the rest', async () => {
    const p = await seedProject(t.db);
    await applyProfileUpdates(t.db, p.id, [{ $distinct_id: 'u', $set: { name: 'x', n: 1 } }]);
    const result = await applyProfileUpdates(t.db, p.id, [
      { $distinct_id: 'u', $set: { ok: true } },
      { $distinct_id: 'u', $set: { half: 'applied?' }, $add: { name: 1 } },
      { $set: { a: 1 } },
      'not an object',
      { $distinct_id: 'u', $add: { n: 1 } },
    ]);
    expect(result.received).toBe(5);
    expect(result.applied).toBe(2);
    expect(result.rejected.map((r) => r.index)).toEqual([1, 2, 3]);
    expect(result.rejected[0]!.message).toMatch(/cannot \$add to 'name'/);
    const stored = await findProfile(t.db, p.id, user('u'));
    expect(stored?.properties).toMatchObject({ name: 'x', n: 2, ok: true });
    expect(stored?.properties).not.toHaveProperty('half');
  });

  it('runs inside a caller transaction and rolls back with it', async () => {
    const p = await seedProject(t.db);
    await expect(
      t.db.transaction(async (trx) => {
        const r = await applyProfileUpdates(trx, p.id, [{ $distinct_id: 'v', $set: { a: 1 } }]);
        expect(r.applied).toBe(1);
        throw new Error('caller aborts');
      }),
    ).rejects.toThrow('caller aborts');
    expect(await findProfile(t.db, p.id, user('v'))).toBeUndefined();
  });

  it('group profiles: set, set_once, union, remove, unset, delete; $add/$append refused', async () => {
    const p = await seedProject(t.db);
    const g = { $group_key: 'company', $group_id: 'Acme' };
    const result = await applyGroupUpdates(t.db, p.id, [
      { ...g, $set: { industry: 'widgets', size: 5 }, $time: T },
      { ...g, $set_once: { founded: 1999, size: 99 } },
      { ...g, $union: { products: ['anvil', 'rocket'] } },
      { ...g, $remove: { products: 'rocket' } },
      { ...g, $unset: ['size'], $time: T + 1 },
      { ...g, $add: { size: 1 } },
      { ...g, $append: { products: 'x' } },
      { $group_key: 'company', $group_id: 'Gone', $set: { a: 1 } },
      { $group_key: 'company', $group_id: 'Gone', $delete: '' },
      { $group_key: 'team', $group_id: 'Acme', $set: { other: true } },
    ]);
    expect(result.applied).toBe(8);
    expect(result.rejected.map((r) => [r.index, r.message])).toEqual([
      [5, expect.stringMatching(/'\$add' is not supported on group profiles/)],
      [6, expect.stringMatching(/'\$append' is not supported on group profiles/)],
    ]);
    const acme = await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company', groupId: 'Acme' });
    // Group profiles have no $last_seen.
    expect(acme?.properties).toEqual({ industry: 'widgets', founded: 1999, products: ['anvil'] });
    expect(await findProfile(t.db, p.id, { kind: 'group', groupKey: 'company', groupId: 'Gone' })).toBeUndefined();
    expect((await findProfile(t.db, p.id, { kind: 'group', groupKey: 'team', groupId: 'Acme' }))?.properties).toEqual({ other: true });
  });

  it('keeps projects apart and handles 2000 updates over 1000 profiles in one call quickly', async () => {
    const a = await seedProject(t.db);
    const b = await seedProject(t.db);
    const updates = Array.from({ length: 2000 }, (_, i) =>
      i % 2 === 0
        ? { $distinct_id: `user-${i / 2}`, $set: { n: i, email: `u${i}@example.com`, plan: 'pro', tags: ['a', 'b'] } }
        : { $distinct_id: `user-${(i - 1) / 2}`, $add: { visits: 1 }, $union: { tags: ['c'] } },
    );
    const started = performance.now();
    const r = await applyProfileUpdates(t.db, a.id, updates);
    const first = performance.now() - started;
    expect(r).toEqual({ received: 2000, applied: 2000, rejected: [] });
    const again = performance.now();
    await applyProfileUpdates(t.db, a.id, updates);
    const second = performance.now() - again;
    expect(await countProfiles(t.db, 'user', a.id)).toBe(1000);
    expect(await countProfiles(t.db, 'user', b.id)).toBe(0);
    const u = await findProfile(t.db, a.id, user('user-998'));
    expect(u?.properties).toMatchObject({ n: 1996, visits: 2, tags: ['a', 'b', 'c'] });
    // Generous bound for a shared 2-core machine; typical is well under a second.
    expect(first + second).toBeLessThan(10_000);
  });

  it('serialises concurrent updates of the same profiles (no lost $add)', async () => {
    const p = await seedProject(t.db);
    const batch = Array.from({ length: 50 }, (_, i) => ({ $distinct_id: `c${i % 10}`, $add: { n: 1 } }));
    await Promise.all(Array.from({ length: 8 }, () => applyProfileUpdates(t.db, p.id, batch)));
    for (let i = 0; i < 10; i++) expect((await findProfile(t.db, p.id, user(`c${i}`)))?.properties.n).toBe(40);
  });
});

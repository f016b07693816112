/**
 * The single write path for user profiles and group profiles. /engage, /groups, warehouse
 * syncs (user and group tables, applied as `$set`) and migrations (user properties) all end here.
 *
 * A call is one transaction (or runs inside the caller's): every profile it touches is loaded
 * once, the updates are applied in memory in request order, and the changed profiles are written
 * back in batches. An invalid update — malformed, or an operator that cannot apply to the stored
 * value — is rejected by index and leaves no trace; the others are applied.
 */
import client from 'prom-client';
import { applyProfileOps, type ProfileState } from '../domain/profile-ops.js';
import { parseProfileUpdate, type ParsedProfileUpdate, type ProfileKind } from '../domain/profile-update.js';
import type { Db, DbOrTrx } from '../db/knex.js';
import { loadProfileStates, lockProfileKeys, profileKeyString, writeProfileStates, type ProfileWrite } from '../db/profiles.repo.js';
import { registry } from '../lib/metrics.js';

export interface ProfileUpdateResult {
  received: number;
  applied: number;
  rejected: { index: number; message: string }[];
}

export interface ProfileUpdateOptions {
  /** Epoch ms used for updates without `$time` (and as `updated_at`); default Date.now(). */
  now?: number;
}

const profileUpdates = new client.Counter({
  name: 'profile_updates_total',
  help: 'Profile and group profile updates, by kind (user, group) and outcome (applied, rejected)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

function isTransaction(db: DbOrTrx): boolean {
  return 'isTransaction' in db && Boolean(db.isTransaction);
}

async function applyUpdates(
  db: DbOrTrx,
  kind: ProfileKind,
  projectId: number,
  updates: readonly unknown[],
  options: ProfileUpdateOptions,
): Promise<ProfileUpdateResult> {
  const now = options.now ?? Date.now();
  const rejected: ProfileUpdateResult['rejected'] = [];
  const parsed: { index: number; update: ParsedProfileUpdate }[] = [];
  updates.forEach((raw, index) => {
    const outcome = parseProfileUpdate(raw, kind, now);
    if (outcome.ok) parsed.push({ index, update: outcome.update });
    else rejected.push({ index, message: outcome.message });
  });

  const run = async (trx: DbOrTrx): Promise<number> => {
    if (parsed.length === 0) return 0;
    const keys = parsed.map((p) => p.update.key);
    await lockProfileKeys(trx, kind, projectId, keys);
    const stored = await loadProfileStates(trx, kind, projectId, keys);
    const current = new Map<string, ProfileState | null>();
    const touched = new Map<string, ProfileWrite>();
    let applied = 0;
    for (const { index, update } of parsed) {
      const id = profileKeyString(update.key);
      const before = current.has(id) ? current.get(id)! : (stored.get(id) ?? null);
      const outcome = applyProfileOps(before, update.ops, { time: update.time, ignoreTime: update.ignoreTime, lastSeen: kind === 'user' });
      if (!outcome.ok) {
        rejected.push({ index, message: outcome.message });
        continue;
      }
      applied += 1;
      current.set(id, outcome.state);
      // A profile that neither existed nor exists now needs no write.
      if (outcome.state !== null || stored.has(id) || touched.has(id)) touched.set(id, { key: update.key, state: outcome.state });
    }
    await writeProfileStates(trx, kind, projectId, [...touched.values()], now);
    return applied;
  };

  const applied = isTransaction(db) ? await run(db) : await (db as Db).transaction(run);
  rejected.sort((a, b) => a.index - b.index);
  profileUpdates.inc({ kind, outcome: 'applied' }, applied);
  profileUpdates.inc({ kind, outcome: 'rejected' }, rejected.length);
  return { received: updates.length, applied, rejected };
}

/** Applies Mixpanel user-profile updates (`$distinct_id` + operators) to a project. */
export function applyProfileUpdates(
  db: DbOrTrx,
  projectId: number,
  updates: readonly unknown[],
  options: ProfileUpdateOptions = {},
): Promise<ProfileUpdateResult> {
  return applyUpdates(db, 'user', projectId, updates, options);
}

/** Applies Mixpanel group-profile updates (`$group_key` + `$group_id` + operators) to a project. */
export function applyGroupUpdates(
  db: DbOrTrx,
  projectId: number,
  updates: readonly unknown[],
  options: ProfileUpdateOptions = {},
): Promise<ProfileUpdateResult> {
  return applyUpdates(db, 'group', projectId, updates, options);
}

/**
 * The caller's permission flags on one experiment, from its project role and its relation to the
 * experiment. The seed lists the flags but not their rules; these are ours:
 *
 * - owner, admin: everything.
 * - analyst: sees shared experiments and its own; edits the basic fields of anything it sees;
 *   the restricted fields, lifecycle actions, deletion and visibility only of its own.
 * - consumer: sees shared experiments; changes nothing.
 *
 * `is_shared_with_project: false` makes an experiment private to its creator and the project's
 * owners and admins. `can_share` lets the caller make an experiment shared (false → true);
 * `can_update_visibility` lets it change visibility either way, i.e. also make it private.
 */
import type { Role } from './roles.js';

export interface ExperimentPermissions {
  can_view: boolean;
  can_update_basic: boolean;
  can_update_restricted: boolean;
  can_update_visibility: boolean;
  can_share: boolean;
}

export type PermissionFlag = keyof ExperimentPermissions;

export interface ExperimentRelation {
  /** The caller is the service account that created the experiment. */
  isCreator: boolean;
  isSharedWithProject: boolean;
}

export function experimentPermissions(role: Role, rel: ExperimentRelation): ExperimentPermissions {
  const manager = role === 'owner' || role === 'admin';
  const can_view = manager || rel.isSharedWithProject || rel.isCreator;
  const editor = can_view && role !== 'consumer';
  const mine = manager || (role === 'analyst' && rel.isCreator);
  return {
    can_view,
    can_update_basic: editor,
    can_update_restricted: mine,
    can_update_visibility: mine,
    can_share: editor,
  };
}

/** Who may create experiments in a workspace (and so become their creator). */
export function canCreateExperiment(role: Role): boolean {
  return role !== 'consumer';
}

/** Descriptive fields any editor may change. */
export const BASIC_FIELDS = ['name', 'description', 'hypothesis', 'tags', 'is_favorited', 'pinned_date'] as const;
/** The experiment's design and results: changing them changes what the experiment measures. */
export const RESTRICTED_FIELDS = ['variants', 'metrics', 'settings', 'exposures_cache', 'results_cache', 'feature_flag'] as const;

export type UpdatableField = (typeof BASIC_FIELDS)[number] | (typeof RESTRICTED_FIELDS)[number] | 'is_shared_with_project';

/** The flag needed to change `field` to `value`, given whether the experiment is shared now. */
export function flagForField(field: UpdatableField, value: unknown, currentlyShared: boolean): PermissionFlag {
  if ((BASIC_FIELDS as readonly string[]).includes(field)) return 'can_update_basic';
  if ((RESTRICTED_FIELDS as readonly string[]).includes(field)) return 'can_update_restricted';
  // is_shared_with_project: widening (or keeping) visibility is sharing; narrowing is a visibility change.
  return value === true || (value === false && !currentlyShared) ? 'can_share' : 'can_update_visibility';
}

/**
 * Why `perms` do not allow this update, or undefined when they do. Names the first field that
 * needs a missing flag, so the caller knows what to drop.
 */
export function updateDenial(
  perms: ExperimentPermissions,
  patch: Partial<Record<UpdatableField, unknown>>,
  currentlyShared: boolean,
): string | undefined {
  for (const [field, value] of Object.entries(patch) as [UpdatableField, unknown][]) {
    if (value === undefined) continue;
    const flag = flagForField(field, value, currentlyShared);
    if (!perms[flag]) return `changing '${field}' needs ${flag}, which this service account does not have on this experiment`;
  }
  return undefined;
}

/** Lifecycle actions and deletion change the experiment as a whole: they need can_update_restricted. */
export const ACTION_FLAG: PermissionFlag = 'can_update_restricted';

/**
 * An experiment as stored, and its public form: exactly the 34 fields of Mixpanel's experiment object, in that
 * order, nothing else. Pure.
 *
 * Archive state and the decision have no field of their own in the public form, so they appear
 * inside `settings` under reserved keys the service manages (`archived`, `archived_at`,
 * `decision`); a client's own settings live beside them.
 */
import { canonicalJson } from './canonical-json.js';
import type { ExperimentPermissions } from './experiment-permissions.js';
import type { ExperimentStatus } from './experiment-state.js';
import { isoTime, isoTimeOrNull } from './iso-time.js';

/** Who acted: a service account, as it was when it acted. */
export interface ExperimentActor {
  id: number;
  /** The service account's username. */
  name: string;
  email: string | null;
}

export interface ExperimentDecision {
  success: boolean;
  variant: string | null;
  message: string | null;
  /** Epoch ms. */
  decidedAt: number;
  decidedById: number;
}

export interface ExperimentRecord {
  id: string;
  workspaceId: number;
  name: string;
  contentType: string;
  description: string | null;
  hypothesis: string | null;
  status: ExperimentStatus;
  tags: string[];
  variants: unknown[];
  metrics: unknown[];
  /** The client's settings, without the reserved keys. */
  settings: Record<string, unknown>;
  exposuresCache: Record<string, unknown>;
  resultsCache: Record<string, unknown>;
  featureFlag: Record<string, unknown> | null;
  decision: ExperimentDecision | null;
  creator: ExperimentActor | null;
  lastModifiedBy: ExperimentActor;
  isFavorited: boolean;
  isSharedWithProject: boolean;
  /** YYYY-MM-DD. */
  pinnedDate: string | null;
  /** Epoch ms from here on. */
  created: number;
  modified: number;
  deleted: number | null;
  startDate: number | null;
  endDate: number | null;
  archivedAt: number | null;
}

/** The public experiment object (`ExperimentApiResponse`). */
export interface ExperimentApi {
  id: string;
  name: string;
  content_type: string;
  description: string | null;
  created: string;
  creator_id: number | null;
  creator_name: string | null;
  creator_email: string | null;
  modified: string;
  deleted: string | null;
  is_favorited: boolean;
  pinned_date: string | null;
  tags: string[];
  last_modified_by_id: number;
  last_modified_by_name: string;
  last_modified_by_email: string;
  can_view: boolean;
  can_update_basic: boolean;
  can_update_restricted: boolean;
  can_update_visibility: boolean;
  is_superadmin: boolean;
  allow_staff_override: boolean;
  can_share: boolean;
  is_shared_with_project: boolean;
  hypothesis: string | null;
  status: ExperimentStatus;
  variants: unknown[];
  metrics: unknown[];
  settings: Record<string, unknown>;
  exposures_cache: Record<string, unknown>;
  results_cache: Record<string, unknown>;
  start_date: string | null;
  end_date: string | null;
  feature_flag: Record<string, unknown> | null;
}

export const EXPERIMENT_CONTENT_TYPE = 'experiment';

/** Keys of `settings` the service owns. */
export const RESERVED_SETTINGS = ['archived', 'archived_at', 'decision'] as const;

/** The reserved part of `settings` as the public form shows it. */
export function reservedSettings(rec: Pick<ExperimentRecord, 'archivedAt' | 'decision'>): Record<string, unknown> {
  const d = rec.decision;
  return {
    archived: rec.archivedAt !== null,
    archived_at: isoTimeOrNull(rec.archivedAt),
    decision: d && {
      success: d.success,
      variant: d.variant,
      message: d.message,
      decided_at: isoTime(d.decidedAt),
      decided_by_id: d.decidedById,
    },
  };
}

/**
 * Checks a client's `settings` against the reserved keys: they may be left out or sent back
 * unchanged (so a read-modify-write round trip works), never changed. Returns the client's part,
 * or the name of the first reserved key that differs.
 */
export function splitSettings(
  settings: Record<string, unknown>,
  current: Pick<ExperimentRecord, 'archivedAt' | 'decision'>,
): { ok: true; own: Record<string, unknown> } | { ok: false; key: string } {
  const reserved = reservedSettings(current);
  const own: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) {
    if ((RESERVED_SETTINGS as readonly string[]).includes(k)) {
      if (canonicalJson(v) !== canonicalJson(reserved[k])) return { ok: false, key: k };
    } else {
      own[k] = v;
    }
  }
  return { ok: true, own };
}

/**
 * The public form. Service accounts are never superadmins and have no staff override. A
 * service account may have no email: `creator_email` is then null and `last_modified_by_email`,
 * which the seed types as a plain string, is "".
 */
export function toExperimentApi(rec: ExperimentRecord, perms: ExperimentPermissions): ExperimentApi {
  return {
    id: rec.id,
    name: rec.name,
    content_type: rec.contentType,
    description: rec.description,
    created: isoTime(rec.created),
    creator_id: rec.creator?.id ?? null,
    creator_name: rec.creator?.name ?? null,
    creator_email: rec.creator?.email ?? null,
    modified: isoTime(rec.modified),
    deleted: isoTimeOrNull(rec.deleted),
    is_favorited: rec.isFavorited,
    pinned_date: rec.pinnedDate,
    tags: rec.tags,
    last_modified_by_id: rec.lastModifiedBy.id,
    last_modified_by_name: rec.lastModifiedBy.name,
    last_modified_by_email: rec.lastModifiedBy.email ?? '',
    can_view: perms.can_view,
    can_update_basic: perms.can_update_basic,
    can_update_restricted: perms.can_update_restricted,
    can_update_visibility: perms.can_update_visibility,
    is_superadmin: false,
    allow_staff_override: false,
    can_share: perms.can_share,
    is_shared_with_project: rec.isSharedWithProject,
    hypothesis: rec.hypothesis,
    status: rec.status,
    variants: rec.variants,
    metrics: rec.metrics,
    settings: { ...rec.settings, ...reservedSettings(rec) },
    exposures_cache: rec.exposuresCache,
    results_cache: rec.resultsCache,
    start_date: isoTimeOrNull(rec.startDate),
    end_date: isoTimeOrNull(rec.endDate),
    feature_flag: rec.featureFlag,
  };
}

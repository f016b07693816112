/**
 * The public experiment object written straight as JSON text, for the listing: a workspace of
 * 10,000 experiments is 10 MB of JSON, and parsing each stored JSON column only to serialise it
 * again (plus building every object) was most of what the listing added to its query
 * (docs/performance.md). The listing reads those columns as text and copies them in. Same
 * fields, same order and same values as `JSON.stringify(toExperimentApi(…))`
 * (test/unit/experiment-api-text.test.ts holds the two equal). Pure.
 */
import type { ExperimentPermissions } from './experiment-permissions.js';
import { iso, isoOrNull, reservedSettings, type ExperimentRecord } from './experiment.js';

/** The JSON columns the listing copies as stored text. */
export const LISTED_JSON_FIELDS = ['tags', 'variants', 'metrics', 'exposuresCache', 'resultsCache', 'featureFlag'] as const;
export type ListedJsonField = (typeof LISTED_JSON_FIELDS)[number];

/** A record as the listing reads it: those columns as JSON text (`null` for SQL NULL). */
export type ListedExperiment = Omit<ExperimentRecord, ListedJsonField> & { json: Record<ListedJsonField, string> };

const j = JSON.stringify;

export function experimentApiText(rec: ListedExperiment, perms: ExperimentPermissions): string {
  return (
    `{"id":${j(rec.id)},"name":${j(rec.name)},"content_type":${j(rec.contentType)},"description":${j(rec.description)}` +
    `,"created":${j(iso(rec.created))},"creator_id":${j(rec.creator?.id ?? null)},"creator_name":${j(rec.creator?.name ?? null)}` +
    `,"creator_email":${j(rec.creator?.email ?? null)},"modified":${j(iso(rec.modified))},"deleted":${j(isoOrNull(rec.deleted))}` +
    `,"is_favorited":${j(rec.isFavorited)},"pinned_date":${j(rec.pinnedDate)},"tags":${rec.json.tags}` +
    `,"last_modified_by_id":${j(rec.lastModifiedBy.id)},"last_modified_by_name":${j(rec.lastModifiedBy.name)}` +
    `,"last_modified_by_email":${j(rec.lastModifiedBy.email ?? '')},"can_view":${j(perms.can_view)}` +
    `,"can_update_basic":${j(perms.can_update_basic)},"can_update_restricted":${j(perms.can_update_restricted)}` +
    `,"can_update_visibility":${j(perms.can_update_visibility)},"is_superadmin":false,"allow_staff_override":false` +
    `,"can_share":${j(perms.can_share)},"is_shared_with_project":${j(rec.isSharedWithProject)},"hypothesis":${j(rec.hypothesis)}` +
    `,"status":${j(rec.status)},"variants":${rec.json.variants},"metrics":${rec.json.metrics}` +
    `,"settings":${j({ ...rec.settings, ...reservedSettings(rec) })},"exposures_cache":${rec.json.exposuresCache}` +
    `,"results_cache":${rec.json.resultsCache},"start_date":${j(isoOrNull(rec.startDate))},"end_date":${j(isoOrNull(rec.endDate))}` +
    `,"feature_flag":${rec.json.featureFlag}}`
  );
}

/**
 * JSON Schemas of the experiments API. The three named in the seed (`ExperimentApiResponse`,
 * `ListExperimentApiResponse`, `ExperimentApiErrorResponse`) follow it field for field; the
 * others are ours and as strict (no additional properties).
 */
import type { JsonSchema } from './types.js';

const str: JsonSchema = { type: 'string' };
const strOrNull: JsonSchema = { type: ['string', 'null'] };
const bool: JsonSchema = { type: 'boolean' };
const dateTime: JsonSchema = { type: 'string', format: 'date-time' };
const dateTimeOrNull: JsonSchema = { type: ['string', 'null'], format: 'date-time' };
const flag = (what: string): JsonSchema => ({ type: 'boolean', description: `permission flag for the caller: ${what}` });
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

const STATUSES = ['draft', 'active', 'concluded', 'success', 'fail'] as const;

export const experimentProperties: Record<string, JsonSchema> = {
  id: { type: 'string', format: 'uuid', description: 'UUID of the experiment' },
  name: str,
  content_type: { type: 'string', description: 'always "experiment"' },
  description: strOrNull,
  created: dateTime,
  creator_id: { type: ['integer', 'null'], description: 'id of the service account that created the experiment' },
  creator_name: { type: ['string', 'null'], description: "that service account's username" },
  creator_email: { type: ['string', 'null'], description: "that service account's email, null when it has none" },
  modified: dateTime,
  deleted: { ...dateTimeOrNull, description: 'time of soft deletion; null while the experiment is live' },
  is_favorited: bool,
  pinned_date: { type: ['string', 'null'], format: 'date', description: 'YYYY-MM-DD' },
  tags: { type: 'array', items: str },
  last_modified_by_id: { type: 'integer' },
  last_modified_by_name: { type: 'string', description: 'username of the service account that last changed the experiment' },
  last_modified_by_email: { type: 'string', description: 'its email, or "" when it has none' },
  can_view: flag('may see the experiment'),
  can_update_basic: flag('may change name, description, hypothesis, tags, is_favorited, pinned_date'),
  can_update_restricted: flag('may change variants, metrics, settings, caches, feature_flag; run lifecycle actions; delete'),
  can_update_visibility: flag('may change is_shared_with_project either way'),
  is_superadmin: { type: 'boolean', description: 'always false: service accounts are never superadmins' },
  allow_staff_override: { type: 'boolean', description: 'always false for service accounts' },
  can_share: flag('may make the experiment shared with the project'),
  is_shared_with_project: bool,
  hypothesis: strOrNull,
  status: { type: 'string', enum: STATUSES },
  variants: { type: 'array', description: 'array of variant objects' },
  metrics: { type: 'array', description: 'array of metric objects' },
  settings: {
    type: 'object',
    description:
      'experiment settings, including feature flag settings; the service manages the keys archived (boolean), archived_at and decision',
  },
  exposures_cache: { type: 'object', description: 'cached exposure counts' },
  results_cache: { type: 'object', description: 'cached experiment results' },
  start_date: dateTimeOrNull,
  end_date: dateTimeOrNull,
  feature_flag: { type: ['object', 'null'], description: 'linked feature flag data; null when no flag is linked' },
};

const writable = {
  name: { type: 'string', minLength: 1, maxLength: 255 },
  description: { type: ['string', 'null'], maxLength: 10_000 },
  hypothesis: { type: ['string', 'null'], maxLength: 10_000 },
  tags: { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 255 } },
  is_favorited: bool,
  pinned_date: { type: ['string', 'null'], format: 'date' },
  is_shared_with_project: bool,
  variants: { type: 'array', maxItems: 1000, items: { type: 'object' } },
  metrics: { type: 'array', maxItems: 1000, items: { type: 'object' } },
  settings: { type: 'object', description: 'reserved keys (archived, archived_at, decision) may be sent back unchanged, never changed' },
  exposures_cache: { type: 'object' },
  results_cache: { type: 'object' },
  feature_flag: { type: ['object', 'null'] },
} satisfies Record<string, JsonSchema>;

export const experimentSchemas: Record<string, JsonSchema> = {
  ExperimentApiResponse: {
    type: 'object',
    properties: experimentProperties,
    required: Object.keys(experimentProperties),
    additionalProperties: false,
  },
  ListExperimentApiResponse: {
    type: 'object',
    properties: { status: str, results: { type: 'array', items: ref('ExperimentApiResponse') } },
    required: ['status', 'results'],
    additionalProperties: false,
  },
  ExperimentApiErrorResponse: {
    type: 'object',
    properties: {
      status: { type: 'string', enum: ['error'] },
      type: str,
      error: { oneOf: [{ type: 'string' }, { type: 'object' }], description: 'details about the error' },
    },
    required: ['status', 'type', 'error'],
    additionalProperties: false,
  },
  ExperimentAuthErrorResponse: {
    type: 'object',
    properties: { error: { type: 'string', description: 'details' }, status: { type: 'string', enum: ['error'] } },
    required: ['error', 'status'],
    additionalProperties: false,
  },
  SingleExperimentApiResponse: {
    type: 'object',
    properties: { status: { type: 'string', enum: ['ok'] }, results: ref('ExperimentApiResponse') },
    required: ['status', 'results'],
    additionalProperties: false,
  },
  CreateExperimentRequest: {
    type: 'object',
    properties: writable,
    required: ['name'],
    additionalProperties: false,
  },
  UpdateExperimentRequest: {
    type: 'object',
    properties: writable,
    minProperties: 1,
    additionalProperties: false,
  },
  DecideExperimentRequest: {
    type: 'object',
    properties: {
      success: { type: 'boolean', description: 'true: the experiment becomes success; false: fail' },
      variant: { type: ['string', 'null'], minLength: 1, maxLength: 255, description: 'the winning variant, if any' },
      message: { type: ['string', 'null'], maxLength: 10_000 },
    },
    required: ['success'],
    additionalProperties: false,
  },
  EmptyRequest: { type: 'object', additionalProperties: false, description: 'no fields; the body may also be empty' },
};

/**
 * The experiments API's operations, independent of HTTP: each takes the database, the workspace
 * and the calling service account with its role, and returns public experiment objects or throws
 * a ValidationError (403 not allowed, 404 unknown, 400 bad input or illegal transition).
 */
import crypto from 'node:crypto';
import {
  findLiveExperiment,
  insertExperiment,
  liveExperimentPages,
  updateLiveExperiment,
  type ExperimentChanges,
} from '../db/experiments.repo.js';
import type { DbOrTrx } from '../db/knex.js';
import {
  EXPERIMENT_CONTENT_TYPE,
  splitSettings,
  toExperimentApi,
  type ExperimentActor,
  type ExperimentApi,
  type ExperimentRecord,
} from '../domain/experiment.js';
import type { CreateExperimentInput, DecideInput, UpdateExperimentInput } from '../domain/experiment-input.js';
import {
  ACTION_FLAG,
  canCreateExperiment,
  experimentPermissions,
  updateDenial,
  type ExperimentPermissions,
} from '../domain/experiment-permissions.js';
import { describeState, transition, type ExperimentAction, type ExperimentState } from '../domain/experiment-state.js';
import type { Role } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';

export interface ExperimentScope {
  workspaceId: number;
  role: Role;
  actor: ExperimentActor;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (id: string) => new ValidationError(404, `experiment ${id} not found`);
const forbidden = (message: string) => new ValidationError(403, message);
const invalidTransition = (message: string) => new ValidationError(400, message, { type: 'invalid_transition' });

function permissionsOf(scope: ExperimentScope, rec: ExperimentRecord): ExperimentPermissions {
  return experimentPermissions(scope.role, {
    isCreator: rec.creator !== null && rec.creator.id === scope.actor.id,
    isSharedWithProject: rec.isSharedWithProject,
  });
}

function view(scope: ExperimentScope, rec: ExperimentRecord): ExperimentApi {
  return toExperimentApi(rec, permissionsOf(scope, rec));
}

/** A live experiment the caller can see; anything else is 404, so private ones are not revealed. */
async function load(db: DbOrTrx, scope: ExperimentScope, id: string): Promise<ExperimentRecord> {
  // Checked first: Postgres would refuse a malformed value for a uuid column with an error.
  if (!UUID.test(id)) throw notFound(id);
  const rec = await findLiveExperiment(db, scope.workspaceId, id.toLowerCase());
  if (!rec || !permissionsOf(scope, rec).can_view) throw notFound(id);
  return rec;
}

function ownSettings(settings: Record<string, unknown>, rec: Pick<ExperimentRecord, 'archivedAt' | 'decision'>) {
  const split = splitSettings(settings, rec);
  if (!split.ok) {
    throw new ValidationError(400, `'settings.${split.key}' is managed by the lifecycle actions and cannot be changed directly`);
  }
  return split.own;
}

/** The experiments the caller can see, newest first, a page at a time (the listing streams them). */
export async function* listExperimentPages(db: DbOrTrx, scope: ExperimentScope): AsyncGenerator<ExperimentApi[]> {
  for await (const page of liveExperimentPages(db, scope.workspaceId)) {
    const visible: ExperimentApi[] = [];
    for (const rec of page) {
      const api = view(scope, rec);
      if (api.can_view) visible.push(api);
    }
    if (visible.length > 0) yield visible;
  }
}

export async function getExperiment(db: DbOrTrx, scope: ExperimentScope, id: string): Promise<ExperimentApi> {
  return view(scope, await load(db, scope, id));
}

export async function createExperiment(
  db: DbOrTrx,
  scope: ExperimentScope,
  input: CreateExperimentInput,
  now: number,
): Promise<ExperimentApi> {
  if (!canCreateExperiment(scope.role)) forbiddenRole(scope.role, 'create experiments');
  const rec: ExperimentRecord = {
    id: crypto.randomUUID(),
    workspaceId: scope.workspaceId,
    name: input.name,
    contentType: EXPERIMENT_CONTENT_TYPE,
    description: input.description ?? null,
    hypothesis: input.hypothesis ?? null,
    status: 'draft',
    tags: input.tags ?? [],
    variants: input.variants ?? [],
    metrics: input.metrics ?? [],
    settings: ownSettings(input.settings ?? {}, { archivedAt: null, decision: null }),
    exposuresCache: input.exposures_cache ?? {},
    resultsCache: input.results_cache ?? {},
    featureFlag: input.feature_flag ?? null,
    decision: null,
    creator: scope.actor,
    lastModifiedBy: scope.actor,
    isFavorited: input.is_favorited ?? false,
    isSharedWithProject: input.is_shared_with_project ?? true,
    pinnedDate: input.pinned_date ?? null,
    created: now,
    modified: now,
    deleted: null,
    startDate: null,
    endDate: null,
    archivedAt: null,
  };
  await insertExperiment(db, rec);
  return view(scope, rec);
}

function forbiddenRole(role: Role, what: string): never {
  throw forbidden(`role '${role}' may not ${what}`);
}

export async function updateExperiment(
  db: DbOrTrx,
  scope: ExperimentScope,
  id: string,
  input: UpdateExperimentInput,
  now: number,
): Promise<ExperimentApi> {
  const rec = await load(db, scope, id);
  const denial = updateDenial(permissionsOf(scope, rec), input, rec.isSharedWithProject);
  if (denial) throw forbidden(denial);
  const changes: ExperimentChanges = {
    name: input.name,
    description: input.description,
    hypothesis: input.hypothesis,
    tags: input.tags,
    isFavorited: input.is_favorited,
    pinnedDate: input.pinned_date,
    isSharedWithProject: input.is_shared_with_project,
    variants: input.variants,
    metrics: input.metrics,
    settings: input.settings === undefined ? undefined : ownSettings(input.settings, rec),
    exposuresCache: input.exposures_cache,
    resultsCache: input.results_cache,
    featureFlag: input.feature_flag,
    lastModifiedBy: scope.actor,
    modified: now,
  };
  if (!(await updateLiveExperiment(db, scope.workspaceId, rec.id, changes))) throw notFound(id);
  return getExperiment(db, scope, rec.id);
}

/** Soft delete: `deleted` gets the time, and the experiment leaves every listing and lookup. */
export async function deleteExperiment(db: DbOrTrx, scope: ExperimentScope, id: string, now: number): Promise<ExperimentApi> {
  const rec = await load(db, scope, id);
  if (!permissionsOf(scope, rec)[ACTION_FLAG]) throw forbidden(`deleting an experiment needs ${ACTION_FLAG}`);
  const changes = { deleted: now, modified: now, lastModifiedBy: scope.actor };
  if (!(await updateLiveExperiment(db, scope.workspaceId, rec.id, changes))) throw notFound(id);
  return view(scope, { ...rec, ...changes });
}

/** A lifecycle action; `body` is the parsed decide input for `decide`, ignored otherwise. */
export async function applyAction(
  db: DbOrTrx,
  scope: ExperimentScope,
  id: string,
  action: ExperimentAction,
  body: DecideInput | undefined,
  now: number,
): Promise<ExperimentApi> {
  const rec = await load(db, scope, id);
  if (!permissionsOf(scope, rec)[ACTION_FLAG]) throw forbidden(`${action} needs ${ACTION_FLAG}`);
  const state: ExperimentState = { status: rec.status, archived: rec.archivedAt !== null };
  const result = transition(state, action, now, body);
  if (!result.ok) throw invalidTransition(result.error);
  const { effects } = result;
  const changes: ExperimentChanges = {
    status: effects.status,
    archivedAt: effects.archivedAt,
    startDate: effects.startDate,
    endDate: effects.endDate,
    lastModifiedBy: scope.actor,
    modified: now,
  };
  if (action === 'decide' && body) {
    changes.decision = {
      success: body.success,
      variant: body.variant ?? null,
      message: body.message ?? null,
      decidedAt: now,
      decidedById: scope.actor.id,
    };
  }
  if (!(await updateLiveExperiment(db, scope.workspaceId, rec.id, changes, state))) {
    // Someone else moved it first: answer against the state it is in now.
    const fresh = await load(db, scope, id);
    throw invalidTransition(`cannot ${action} an experiment in state ${describeState({ status: fresh.status, archived: fresh.archivedAt !== null })}`);
  }
  return getExperiment(db, scope, rec.id);
}

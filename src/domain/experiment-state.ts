/**
 * The experiment lifecycle as a pure state machine. The seed names the five statuses and the
 * action groups (launch, force conclude, decide, archive) but not the transitions; these are ours:
 *
 *   draft --launch--> active --force_conclude--> concluded --decide--> success | fail
 *
 * Archiving is orthogonal to status (an archived experiment keeps its status, so unarchiving
 * restores it exactly). Any status but `active` may be archived: a running experiment must be
 * concluded first, so exposure counting is never cut off silently. An archived experiment takes
 * no lifecycle action but `unarchive`.
 */

export const EXPERIMENT_STATUSES = ['draft', 'active', 'concluded', 'success', 'fail'] as const;
export type ExperimentStatus = (typeof EXPERIMENT_STATUSES)[number];

export const EXPERIMENT_ACTIONS = ['launch', 'force_conclude', 'decide', 'archive', 'unarchive'] as const;
export type ExperimentAction = (typeof EXPERIMENT_ACTIONS)[number];

export function isExperimentAction(value: unknown): value is ExperimentAction {
  return typeof value === 'string' && (EXPERIMENT_ACTIONS as readonly string[]).includes(value);
}

export interface ExperimentState {
  status: ExperimentStatus;
  archived: boolean;
}

/** Column changes a legal transition makes; times are epoch ms, `null` clears. */
export interface TransitionEffects {
  status: ExperimentStatus;
  archivedAt?: number | null;
  startDate?: number;
  endDate?: number | null;
}

export type TransitionResult = { ok: true; effects: TransitionEffects } | { ok: false; error: string };

/** How a state is named in error messages: `active`, or `success (archived)`. */
export function describeState(state: ExperimentState): string {
  return state.archived ? `${state.status} (archived)` : state.status;
}

const SOURCE: Record<Exclude<ExperimentAction, 'archive' | 'unarchive'>, ExperimentStatus> = {
  launch: 'draft',
  force_conclude: 'active',
  decide: 'concluded',
};

function illegal(action: ExperimentAction, state: ExperimentState): TransitionResult {
  return { ok: false, error: `cannot ${action} an experiment in state ${describeState(state)}` };
}

/**
 * The effects of `action` on an experiment in `state` at time `now`, or why it is illegal.
 * `decide` needs `success`: true → success, false → fail.
 */
export function transition(
  state: ExperimentState,
  action: ExperimentAction,
  now: number,
  decision?: { success: boolean },
): TransitionResult {
  switch (action) {
    case 'archive':
      if (state.archived || state.status === 'active') return illegal(action, state);
      return { ok: true, effects: { status: state.status, archivedAt: now } };
    case 'unarchive':
      if (!state.archived) return illegal(action, state);
      return { ok: true, effects: { status: state.status, archivedAt: null } };
    default:
      if (state.archived || state.status !== SOURCE[action]) return illegal(action, state);
  }
  switch (action) {
    case 'launch':
      // A relaunch never happens (draft is only the initial state), so end_date is simply unset.
      return { ok: true, effects: { status: 'active', startDate: now, endDate: null } };
    case 'force_conclude':
      return { ok: true, effects: { status: 'concluded', endDate: now } };
    case 'decide':
      if (!decision) throw new TypeError('decide needs a decision');
      return { ok: true, effects: { status: decision.success ? 'success' : 'fail' } };
  }
}

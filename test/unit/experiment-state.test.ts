import { describe, expect, it } from 'vitest';
import {
  EXPERIMENT_ACTIONS,
  EXPERIMENT_STATUSES,
  describeState,
  transition,
  type ExperimentState,
  type TransitionEffects,
} from '../../src/domain/experiment-state.js';

const NOW = 1_700_000_000_000;

/** The whole legal table: everything not listed here must be refused. */
const LEGAL: Record<string, TransitionEffects> = {
  'draft launch': { status: 'active', startDate: NOW, endDate: null },
  'active force_conclude': { status: 'concluded', endDate: NOW },
  'concluded decide': { status: 'success' },
  'draft archive': { status: 'draft', archivedAt: NOW },
  'concluded archive': { status: 'concluded', archivedAt: NOW },
  'success archive': { status: 'success', archivedAt: NOW },
  'fail archive': { status: 'fail', archivedAt: NOW },
  'draft (archived) unarchive': { status: 'draft', archivedAt: null },
  'concluded (archived) unarchive': { status: 'concluded', archivedAt: null },
  'success (archived) unarchive': { status: 'success', archivedAt: null },
  'fail (archived) unarchive': { status: 'fail', archivedAt: null },
};

describe('experiment state machine', () => {
  const states: ExperimentState[] = EXPERIMENT_STATUSES.flatMap((status) => [
    { status, archived: false },
    // An active experiment cannot be archived, so "active (archived)" is unreachable; it is
    // still checked, and must refuse everything but unarchive.
    { status, archived: true },
  ]);

  for (const state of states) {
    for (const action of EXPERIMENT_ACTIONS) {
      const key = `${describeState(state)} ${action}`;
      const legal = LEGAL[key];
      const expectedLegal = legal !== undefined || key === 'active (archived) unarchive';
      it(`${key}: ${expectedLegal ? 'allowed' : 'refused naming the state'}`, () => {
        const r = transition(state, action, NOW, { success: true });
        if (expectedLegal) {
          expect(r.ok).toBe(true);
          if (legal && r.ok) expect(r.effects).toEqual(legal);
        } else {
          expect(r).toEqual({ ok: false, error: `cannot ${action} an experiment in state ${describeState(state)}` });
        }
      });
    }
  }

  it('decide maps success false to fail and needs a decision', () => {
    expect(transition({ status: 'concluded', archived: false }, 'decide', NOW, { success: false })).toEqual({
      ok: true,
      effects: { status: 'fail' },
    });
    expect(() => transition({ status: 'concluded', archived: false }, 'decide', NOW)).toThrow(TypeError);
  });

  it('names the state as the brief example does', () => {
    const r = transition({ status: 'active', archived: false }, 'launch', NOW);
    expect(r.ok ? '' : r.error).toBe('cannot launch an experiment in state active');
  });
});

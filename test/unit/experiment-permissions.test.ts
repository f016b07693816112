import { describe, expect, it } from 'vitest';
import { experimentPermissions, flagForField, updateDenial, canCreateExperiment } from '../../src/domain/experiment-permissions.js';
import type { Role } from '../../src/domain/roles.js';

const ALL = { can_view: true, can_update_basic: true, can_update_restricted: true, can_update_visibility: true, can_share: true };
const NONE = { can_view: false, can_update_basic: false, can_update_restricted: false, can_update_visibility: false, can_share: false };
const READ_ONLY = { ...NONE, can_view: true };
const EDITOR = { ...NONE, can_view: true, can_update_basic: true, can_share: true };

describe('experiment permission flags', () => {
  const cases: [Role, boolean, boolean, typeof ALL][] = [
    // role, isCreator, shared, expected
    ['owner', false, true, ALL],
    ['owner', false, false, ALL],
    ['admin', false, false, ALL],
    ['analyst', true, true, ALL],
    ['analyst', true, false, ALL],
    ['analyst', false, true, EDITOR],
    ['analyst', false, false, NONE],
    ['consumer', false, true, READ_ONLY],
    ['consumer', false, false, NONE],
    // A consumer that once created an experiment (its role was lowered since) sees it but changes nothing.
    ['consumer', true, false, READ_ONLY],
  ];
  for (const [role, isCreator, shared, expected] of cases) {
    it(`${role}${isCreator ? ' (creator)' : ''} on a ${shared ? 'shared' : 'private'} experiment`, () => {
      expect(experimentPermissions(role, { isCreator, isSharedWithProject: shared })).toEqual(expected);
    });
  }

  it('only consumers cannot create', () => {
    expect((['owner', 'admin', 'analyst', 'consumer'] as Role[]).map(canCreateExperiment)).toEqual([true, true, true, false]);
  });

  it('maps fields to flags: basic, restricted, and visibility by direction', () => {
    expect(flagForField('tags', [], true)).toBe('can_update_basic');
    expect(flagForField('pinned_date', null, true)).toBe('can_update_basic');
    expect(flagForField('variants', [], true)).toBe('can_update_restricted');
    expect(flagForField('feature_flag', null, true)).toBe('can_update_restricted');
    expect(flagForField('is_shared_with_project', true, false)).toBe('can_share');
    expect(flagForField('is_shared_with_project', false, false)).toBe('can_share');
    expect(flagForField('is_shared_with_project', false, true)).toBe('can_update_visibility');
  });

  it('names the first field the caller may not change', () => {
    expect(updateDenial(EDITOR, { name: 'x', tags: ['a'] }, true)).toBeUndefined();
    expect(updateDenial(EDITOR, { name: 'x', metrics: [] }, true)).toBe(
      "changing 'metrics' needs can_update_restricted, which this service account does not have on this experiment",
    );
    expect(updateDenial(EDITOR, { is_shared_with_project: false }, true)).toMatch(/can_update_visibility/);
    expect(updateDenial(READ_ONLY, { is_favorited: true }, true)).toMatch(/'is_favorited' needs can_update_basic/);
    expect(updateDenial(READ_ONLY, { name: undefined }, true)).toBeUndefined();
  });
});

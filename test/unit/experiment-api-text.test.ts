/** The listing's JSON writer gives exactly what serialising the public object gives. */
import { describe, expect, it } from 'vitest';
import { experimentApiText, LISTED_JSON_FIELDS, type ListedExperiment } from '../../src/domain/experiment-api-text.js';
import { toExperimentApi, type ExperimentRecord } from '../../src/domain/experiment.js';
import { syntheticExperiments } from '../helpers/experiments-fixture.js';

/** The record as the listing reads it, its JSON columns stored as `format` writes them. */
function listed(rec: ExperimentRecord, format: (v: unknown) => string = (v) => JSON.stringify(v)): ListedExperiment {
  const head: Record<string, unknown> = { ...rec };
  const json = {} as ListedExperiment['json'];
  for (const f of LISTED_JSON_FIELDS) {
    json[f] = format(rec[f]);
    delete head[f];
  }
  return { ...(head as Omit<ExperimentRecord, (typeof LISTED_JSON_FIELDS)[number]>), json };
}

const actor = { id: 7, name: 'sa "quoted" \u00e9', email: null };
const perms = { can_view: true, can_update_basic: false, can_update_restricted: true, can_update_visibility: false, can_share: true };

const records: ExperimentRecord[] = [
  ...syntheticExperiments(3, actor, 12, 1_700_000_000_000),
  {
    ...syntheticExperiments(3, actor, 1, 1_700_000_000_000)[0]!,
    name: 'line\nbreak \u2028 and </script>',
    description: null,
    creator: null,
    lastModifiedBy: { id: 9, name: 'x', email: 'x@example.com' },
    settings: { traffic: 0.5, nested: { a: [1, null, 'b'] } },
    decision: { success: true, variant: 'b', message: 'ship it', decidedAt: 1_700_000_500_000, decidedById: 9 },
    archivedAt: 1_700_000_600_000,
    deleted: 1_700_000_700_000,
    featureFlag: { key: 'f', rollout: [0.1, 0.9] },
    resultsCache: { lift: -0.25, note: 'ünïcode' },
    tags: [],
  },
];

describe('experimentApiText', () => {
  it('is JSON.stringify(toExperimentApi(…)), byte for byte, when the columns hold compact JSON (SQLite)', () => {
    for (const rec of records) expect(experimentApiText(listed(rec), perms)).toBe(JSON.stringify(toExperimentApi(rec, perms)));
  });

  it('parses to the same object, in the same key order, when the columns hold spaced JSON (jsonb as text)', () => {
    for (const rec of records) {
      const text = experimentApiText(
        listed(rec, (v) => JSON.stringify(v, null, 1)),
        perms,
      );
      const parsed = JSON.parse(text) as Record<string, unknown>;
      const expected = toExperimentApi(rec, perms);
      expect(parsed).toEqual(JSON.parse(JSON.stringify(expected)));
      expect(Object.keys(parsed)).toEqual(Object.keys(expected));
    }
  });
});

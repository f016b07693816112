import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { splitSettings, toExperimentApi, type ExperimentRecord } from '../../src/domain/experiment.js';
import { createExperimentInput, decideInput, describeIssues, unstorableTextAt, updateExperimentInput } from '../../src/domain/experiment-input.js';
import { experimentPermissions } from '../../src/domain/experiment-permissions.js';
import { experimentsOpenApi } from '../../src/http/openapi/experiments.openapi.js';

const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

const record: ExperimentRecord = {
  id: '0b7e8f5e-2a57-4a3f-9f55-6f1f1d1f2a10',
  workspaceId: 1,
  name: 'Checkout button',
  contentType: 'experiment',
  description: null,
  hypothesis: 'green converts better',
  status: 'concluded',
  tags: ['checkout'],
  variants: [{ key: 'a' }, { key: 'b' }],
  metrics: [],
  settings: { traffic: 0.5 },
  exposuresCache: {},
  resultsCache: {},
  featureFlag: null,
  decision: null,
  creator: { id: 7, name: 'ci-bot', email: null },
  lastModifiedBy: { id: 7, name: 'ci-bot', email: null },
  isFavorited: false,
  isSharedWithProject: true,
  pinnedDate: '2024-02-29',
  created: Date.UTC(2024, 0, 1),
  modified: Date.UTC(2024, 0, 2),
  deleted: null,
  startDate: Date.UTC(2024, 0, 1, 12),
  endDate: Date.UTC(2024, 0, 3),
  archivedAt: null,
};

function ajv() {
  const a = new Ajv2020({ strict: true, allowUnionTypes: true });
  addFormats(a);
  a.addVocabulary(['openapi', 'info', 'servers', 'tags', 'security', 'paths', 'components']);
  a.addSchema(experimentsOpenApi as object, 'openapi.json');
  return a;
}

describe('public experiment form', () => {
  const api = toExperimentApi(record, experimentPermissions('consumer', { isCreator: false, isSharedWithProject: true }));

  it('has exactly the 34 fields of seed §2.1 and passes the strict schema', () => {
    expect(Object.keys(api)).toHaveLength(34);
    expect(Object.keys(api)).toEqual(Object.keys(experimentsOpenApi.components.schemas.ExperimentApiResponse!.properties!));
    const validate = ajv().getSchema('openapi.json#/components/schemas/ExperimentApiResponse')!;
    expect(validate(api)).toBe(true);
    expect(validate({ ...api, extra: 1 })).toBe(false);
    expect(validate({ ...api, tags: [1] })).toBe(false);
    expect(validate({ ...api, pinned_date: '2024-02-30' })).toBe(false);
    expect(validate({ ...api, status: 'archived' })).toBe(false);
  });

  it('formats times as ISO 8601 and fills service-account fields', () => {
    expect(api).toMatchObject({
      created: '2024-01-01T00:00:00.000Z',
      start_date: '2024-01-01T12:00:00.000Z',
      end_date: '2024-01-03T00:00:00.000Z',
      deleted: null,
      creator_id: 7,
      creator_name: 'ci-bot',
      creator_email: null,
      last_modified_by_email: '',
      is_superadmin: false,
      allow_staff_override: false,
      can_view: true,
      can_update_basic: false,
    });
    expect(api.settings).toEqual({ traffic: 0.5, archived: false, archived_at: null, decision: null });
  });

  it('lets reserved settings round-trip unchanged but never change', () => {
    expect(splitSettings({ ...api.settings, traffic: 0.7 }, record)).toEqual({ ok: true, own: { traffic: 0.7 } });
    expect(splitSettings({ archived: true }, record)).toEqual({ ok: false, key: 'archived' });
    expect(splitSettings({ decision: { success: true } }, record)).toEqual({ ok: false, key: 'decision' });
  });
});

describe('request bodies: zod and the OpenAPI request schemas agree', () => {
  const a = ajv();
  const schemas = {
    create: [createExperimentInput, a.getSchema('openapi.json#/components/schemas/CreateExperimentRequest')!],
    update: [updateExperimentInput, a.getSchema('openapi.json#/components/schemas/UpdateExperimentRequest')!],
    decide: [decideInput, a.getSchema('openapi.json#/components/schemas/DecideExperimentRequest')!],
  } as const;
  const samples: [keyof typeof schemas, unknown, boolean][] = [
    ['create', { name: 'x' }, true],
    ['create', { name: 'x', tags: ['a'], pinned_date: '2024-01-31', feature_flag: null, variants: [{}] }, true],
    ['create', {}, false],
    ['create', { name: '' }, false],
    ['create', { name: 'x', status: 'active' }, false],
    ['create', { name: 'x', tags: 'a' }, false],
    ['create', { name: 'x', pinned_date: '2024-13-01' }, false],
    ['create', { name: 'x', variants: [1] }, false],
    ['create', { name: 'x', id: '0b7e8f5e-2a57-4a3f-9f55-6f1f1d1f2a10' }, false],
    ['update', {}, false],
    ['update', { is_favorited: true }, true],
    ['update', { is_favorited: 'yes' }, false],
    ['update', { description: null, hypothesis: null }, true],
    ['decide', { success: true }, true],
    ['decide', { success: false, variant: 'b', message: 'ship it' }, true],
    ['decide', { variant: 'b' }, false],
    ['decide', { success: 1 }, false],
    ['decide', { success: true, winner: 'b' }, false],
  ];
  for (const [kind, body, valid] of samples) {
    it(`${kind} ${JSON.stringify(body)} is ${valid ? 'accepted' : 'refused'} by both`, () => {
      const [zod, validate] = schemas[kind];
      expect(zod.safeParse(body).success).toBe(valid);
      expect(validate(body)).toBe(valid);
    });
  }

  it('describes the first issue with its field', () => {
    const unknown = createExperimentInput.safeParse({ name: 'x', status: 'active' });
    expect(unknown.success ? '' : describeIssues(unknown.error)).toBe("unknown field: 'status'");
    const wrong = createExperimentInput.safeParse({ name: 'x', tags: ['a', 3] });
    expect(wrong.success ? '' : describeIssues(wrong.error)).toMatch(/^'tags\.1': /);
  });

  it('refuses JSON nested deeper than the limit', () => {
    let deep: unknown = {};
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const r = createExperimentInput.safeParse({ name: 'x', settings: deep });
    expect(r.success).toBe(false);
  });

  it('finds strings neither database can store, at any depth', () => {
    expect(unstorableTextAt({ name: 'ok 🧪', tags: ['a'], settings: { x: [1, null, 'y'] } })).toBeUndefined();
    expect(unstorableTextAt({ name: 'a\u0000' })).toBe('name');
    expect(unstorableTextAt({ tags: ['a', '\ud83e'] })).toBe('tags.1');
    expect(unstorableTextAt({ s: { '\udc00': 1 } })).toBe('s.\udc00');
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unstorableTextAt({ deep })).toMatch(/^deep(\.0)+$/);
  });
});

/**
 * The experiments API over real HTTP on both databases. Every call goes through ContractClient,
 * which validates each response against the served OpenAPI document (ajv, strict).
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceAccount } from '../../src/accounts/accounts.service.js';
import { findExperimentById } from '../../src/db/experiments.repo.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { ContractClient } from '../helpers/openapi-contract.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(dbKinds())('experiments API on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let api: ContractClient;
  let p: SeededProject;
  let other: SeededProject;
  const auth: Record<'owner' | 'admin' | 'analyst' | 'analyst2' | 'consumer', string> = {} as never;
  const ids: Record<string, number> = {};
  let base: string;

  async function account(name: string, role: 'admin' | 'analyst' | 'consumer', email?: string) {
    const username = `${name}-${p.id}-${kind}`;
    const sa = await createServiceAccount(t.db, { username, projectId: p.id, role, email });
    const row = await t.db('service_accounts').where({ username }).first();
    ids[name] = Number(row.id);
    return basicAuth(sa.username, sa.secret);
  }

  const create = async (who: keyof typeof auth, json: Record<string, unknown> = {}) => {
    const r = await api.call('POST', base, { auth: auth[who], json: { name: 'exp', ...json } });
    expect(r.status).toBe(201);
    return r.body.results;
  };
  const act = (who: keyof typeof auth, id: string, action: string, json?: unknown) =>
    api.call('POST', `${base}/${id}/${action}`, { auth: auth[who], json });
  const list = async (who: keyof typeof auth) => {
    const r = await api.call('GET', base, { auth: auth[who] });
    expect(r.status).toBe(200);
    return r.body.results as any[];
  };

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db);
    api = await ContractClient.load(app.url);
    p = await seedProject(t.db, { role: 'owner' });
    other = await seedProject(t.db, { role: 'owner' });
    base = `/api/app/workspaces/${p.workspace_id}/experiments`;
    auth.owner = p.basic;
    ids.owner = Number((await t.db('service_accounts').where({ username: p.sa.username }).first()).id);
    auth.admin = await account('admin', 'admin', 'admin@example.com');
    auth.analyst = await account('analyst', 'analyst');
    auth.analyst2 = await account('analyst2', 'analyst', 'a2@example.com');
    auth.consumer = await account('consumer', 'consumer');
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  describe('OpenAPI document', () => {
    it('is served without credentials, version 1.0.0, with the seed operation, tag and Basic scheme', async () => {
      const res = await fetch(`${app.url}/api/app/openapi.json`);
      expect(res.status).toBe(200);
      const doc = await res.json();
      expect(doc.openapi).toMatch(/^3\./);
      expect(doc.info.version).toBe('1.0.0');
      expect(doc.servers[0].url).toBe(app.config.BASE_URL);
      const listOp = doc.paths['/workspaces/{workspace_id}/experiments'].get;
      expect(listOp.operationId).toBe('list-experiments');
      expect(listOp.tags).toEqual(['Experiment Management']);
      expect(listOp.parameters ?? doc.paths['/workspaces/{workspace_id}/experiments'].parameters).toEqual([
        expect.objectContaining({ name: 'workspace_id', in: 'path', required: true, schema: { type: 'integer' } }),
      ]);
      expect(Object.values(doc.components.securitySchemes)).toEqual([expect.objectContaining({ type: 'http', scheme: 'basic' })]);
      const s = doc.components.schemas;
      for (const name of ['ExperimentApiResponse', 'ListExperimentApiResponse', 'ExperimentApiErrorResponse']) {
        expect(s[name].additionalProperties).toBe(false);
      }
      expect(s.ExperimentApiResponse.required).toHaveLength(34);
      expect(s.ExperimentApiErrorResponse.required).toEqual(['status', 'type', 'error']);
      expect(s.ExperimentAuthErrorResponse.properties.status.enum).toEqual(['error']);
    });

    it('compiles every documented response schema in strict mode', () => {
      let n = 0;
      for (const [path, item] of Object.entries(api.doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (method === 'parameters') continue;
          for (const status of Object.keys((op as any).responses)) {
            const concrete = `/api/app${path.replace('{workspace_id}', '1').replace('{experiment_id}', 'x')}`;
            api.validatorFor(method, concrete, status === 'default' ? 599 : Number(status));
            n += 1;
          }
        }
      }
      expect(n).toBeGreaterThan(40);
    });
  });

  describe('create, read, list', () => {
    it('creates a draft with defaults, attributed to the service account (no email → "")', async () => {
      const before = Date.now();
      const e = await create('owner', { name: 'Checkout button', tags: ['checkout', 'q1'], pinned_date: '2024-02-29' });
      expect(e.id).toMatch(UUID);
      expect(e).toMatchObject({
        name: 'Checkout button',
        content_type: 'experiment',
        description: null,
        hypothesis: null,
        status: 'draft',
        tags: ['checkout', 'q1'],
        pinned_date: '2024-02-29',
        creator_id: ids.owner,
        creator_name: p.sa.username,
        creator_email: null,
        last_modified_by_id: ids.owner,
        last_modified_by_name: p.sa.username,
        last_modified_by_email: '',
        is_superadmin: false,
        allow_staff_override: false,
        is_favorited: false,
        is_shared_with_project: true,
        variants: [],
        metrics: [],
        settings: { archived: false, archived_at: null, decision: null },
        exposures_cache: {},
        results_cache: {},
        feature_flag: null,
        deleted: null,
        start_date: null,
        end_date: null,
      });
      expect(e.created).toMatch(ISO);
      expect(e.modified).toBe(e.created);
      expect(Date.parse(e.created)).toBeGreaterThanOrEqual(before - 5);
      const got = await api.call('GET', `${base}/${e.id}`, { auth: auth.owner });
      expect(got.status).toBe(200);
      expect(got.body).toEqual({ status: 'ok', results: e });
    });

    it('uses the email of a service account that has one, and stores JSON fields as given', async () => {
      const e = await create('admin', {
        description: 'd',
        hypothesis: 'h',
        variants: [{ key: 'a', split: 0.5 }, { key: 'b', split: 0.5 }],
        metrics: [{ event: 'purchase', type: 'conversion' }],
        settings: { traffic: 0.2, flag: { key: 'checkout' } },
        feature_flag: { key: 'checkout', enabled: true },
        exposures_cache: { a: 1 },
        results_cache: { lift: 0.1 },
        is_favorited: true,
      });
      expect(e).toMatchObject({
        creator_id: ids.admin,
        creator_email: 'admin@example.com',
        last_modified_by_email: 'admin@example.com',
        variants: [{ key: 'a', split: 0.5 }, { key: 'b', split: 0.5 }],
        settings: { traffic: 0.2, flag: { key: 'checkout' }, archived: false, archived_at: null, decision: null },
        feature_flag: { key: 'checkout', enabled: true },
        exposures_cache: { a: 1 },
        results_cache: { lift: 0.1 },
        is_favorited: true,
      });
      expect((await list('owner')).find((x) => x.id === e.id)).toEqual(e);
    });

    it('lists newest first, each with exactly 34 fields', async () => {
      const a = await create('owner', { name: 'older' });
      await new Promise((r) => setTimeout(r, 5));
      const b = await create('owner', { name: 'newer' });
      const results = await list('owner');
      const order = results.map((x) => x.id);
      expect(order.indexOf(b.id)).toBeLessThan(order.indexOf(a.id));
      for (const x of results) expect(Object.keys(x)).toHaveLength(34);
    });

    it('a consumer may not create (403 in the {status,error} shape)', async () => {
      const r = await api.call('POST', base, { auth: auth.consumer, json: { name: 'nope' } });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ status: 'error', error: "role 'consumer' may not create experiments" });
    });
  });

  describe('permission flags per role', () => {
    const flags = (e: any) => [e.can_view, e.can_update_basic, e.can_update_restricted, e.can_update_visibility, e.can_share];

    it('on a shared experiment an owner created', async () => {
      const e = await create('owner', { name: 'flags' });
      const seen = async (who: keyof typeof auth) => flags((await list(who)).find((x) => x.id === e.id));
      expect(await seen('owner')).toEqual([true, true, true, true, true]);
      expect(await seen('admin')).toEqual([true, true, true, true, true]);
      expect(await seen('analyst')).toEqual([true, true, false, false, true]);
      expect(await seen('consumer')).toEqual([true, false, false, false, false]);
    });

    it('on an analyst’s own private experiment: hidden from other analysts and consumers', async () => {
      const e = await create('analyst', { name: 'private', is_shared_with_project: false });
      expect(flags(e)).toEqual([true, true, true, true, true]);
      expect(flags((await list('owner')).find((x) => x.id === e.id))).toEqual([true, true, true, true, true]);
      expect((await list('analyst2')).some((x) => x.id === e.id)).toBe(false);
      expect((await list('consumer')).some((x) => x.id === e.id)).toBe(false);
      const hidden = await api.call('GET', `${base}/${e.id}`, { auth: auth.consumer });
      expect(hidden.status).toBe(404);
      // Sharing it makes it visible, with the flags of a non-creator.
      const shared = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.analyst, json: { is_shared_with_project: true } });
      expect(shared.status).toBe(200);
      const asAnalyst2 = (await list('analyst2')).find((x) => x.id === e.id);
      expect(flags(asAnalyst2)).toEqual([true, true, false, false, true]);
    });
  });

  describe('update', () => {
    it('an analyst may change basic fields of anything it sees; modifier and modified follow', async () => {
      const e = await create('owner', { name: 'basic' });
      await new Promise((r) => setTimeout(r, 5));
      const r = await api.call('PATCH', `${base}/${e.id}`, {
        auth: auth.analyst2,
        json: { name: 'renamed', tags: ['x'], description: 'why', hypothesis: null, is_favorited: true, pinned_date: null },
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toMatchObject({
        name: 'renamed',
        tags: ['x'],
        description: 'why',
        is_favorited: true,
        creator_id: ids.owner,
        last_modified_by_id: ids.analyst2,
        last_modified_by_name: `analyst2-${p.id}-${kind}`,
        last_modified_by_email: 'a2@example.com',
        created: e.created,
      });
      expect(Date.parse(r.body.results.modified)).toBeGreaterThan(Date.parse(e.modified));
    });

    it('refuses fields the caller’s flags do not cover, with 403 naming the field', async () => {
      const e = await create('owner', { name: 'guarded' });
      const restricted = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.analyst, json: { name: 'ok', variants: [] } });
      expect(restricted.status).toBe(403);
      expect(restricted.body.error).toMatch(/'variants' needs can_update_restricted/);
      const visibility = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.analyst, json: { is_shared_with_project: false } });
      expect(visibility.status).toBe(403);
      expect(visibility.body.error).toMatch(/can_update_visibility/);
      const consumer = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.consumer, json: { is_favorited: true } });
      expect(consumer.status).toBe(403);
      // Nothing was written by the refused requests.
      const after = await api.call('GET', `${base}/${e.id}`, { auth: auth.owner });
      expect(after.body.results).toEqual({ ...e, can_view: true });
    });

    it('settings: client keys replace, reserved keys may round-trip but not change', async () => {
      const e = await create('owner', { name: 'settings', settings: { traffic: 0.1 } });
      const roundTrip = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.owner, json: { settings: { ...e.settings, traffic: 0.3 } } });
      expect(roundTrip.status).toBe(200);
      expect(roundTrip.body.results.settings).toEqual({ traffic: 0.3, archived: false, archived_at: null, decision: null });
      const sneaky = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.owner, json: { settings: { archived: true } } });
      expect(sneaky.status).toBe(400);
      expect(sneaky.body).toEqual({
        status: 'error',
        type: 'validation_error',
        error: "'settings.archived' is managed by the lifecycle actions and cannot be changed directly",
      });
    });

    it('refuses unknown and read-only fields, wrong types and an empty update', async () => {
      const e = await create('owner');
      const cases: [unknown, RegExp][] = [
        [{ colour: 'red' }, /unknown field: 'colour'/],
        [{ status: 'active' }, /unknown field: 'status'/],
        [{ start_date: '2024-01-01T00:00:00Z' }, /unknown field/],
        [{ name: 5 }, /'name': /],
        [{ tags: 'a' }, /'tags': /],
        [{ pinned_date: '2024-02-30' }, /'pinned_date': must be a date YYYY-MM-DD/],
        [{ feature_flag: [] }, /'feature_flag': /],
        [{}, /at least one field/],
        [[{ name: 'x' }], /expected object/i],
      ];
      for (const [json, message] of cases) {
        const r = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.owner, json });
        expect(r.status, JSON.stringify(json)).toBe(400);
        expect(r.body.type).toBe('validation_error');
        expect(r.body.error).toMatch(message);
      }
    });
  });

  describe('lifecycle', () => {
    it('draft → launch → force_conclude → decide success, setting dates and the decision', async () => {
      const e = await create('owner', { variants: [{ key: 'a' }, { key: 'b' }] });
      const launched = await act('owner', e.id, 'launch');
      expect(launched.status).toBe(200);
      expect(launched.body.results).toMatchObject({ status: 'active', end_date: null });
      expect(launched.body.results.start_date).toMatch(ISO);

      const again = await act('owner', e.id, 'launch');
      expect(again.status).toBe(400);
      expect(again.body).toEqual({ status: 'error', type: 'invalid_transition', error: 'cannot launch an experiment in state active' });

      const concluded = await act('owner', e.id, 'force_conclude');
      expect(concluded.status).toBe(200);
      expect(concluded.body.results.status).toBe('concluded');
      expect(Date.parse(concluded.body.results.end_date)).toBeGreaterThanOrEqual(Date.parse(launched.body.results.start_date));

      const decided = await act('admin', e.id, 'decide', { success: true, variant: 'b', message: 'ship b' });
      expect(decided.status).toBe(200);
      expect(decided.body.results.status).toBe('success');
      expect(decided.body.results.last_modified_by_id).toBe(ids.admin);
      expect(decided.body.results.settings.decision).toEqual({
        success: true,
        variant: 'b',
        message: 'ship b',
        decided_at: expect.stringMatching(ISO),
        decided_by_id: ids.admin,
      });
      const twice = await act('owner', e.id, 'decide', { success: false });
      expect(twice.body).toEqual({ status: 'error', type: 'invalid_transition', error: 'cannot decide an experiment in state success' });
    });

    it('decide success:false → fail; archive and unarchive keep the status', async () => {
      const e = await create('owner');
      await act('owner', e.id, 'launch');
      await act('owner', e.id, 'force_conclude');
      const failed = await act('owner', e.id, 'decide', { success: false });
      expect(failed.body.results.status).toBe('fail');
      expect(failed.body.results.settings.decision).toMatchObject({ success: false, variant: null, message: null });

      const archived = await act('owner', e.id, 'archive');
      expect(archived.status).toBe(200);
      expect(archived.body.results.status).toBe('fail');
      expect(archived.body.results.settings).toMatchObject({ archived: true, archived_at: expect.stringMatching(ISO) });
      const twice = await act('owner', e.id, 'archive');
      expect(twice.body).toEqual({ status: 'error', type: 'invalid_transition', error: 'cannot archive an experiment in state fail (archived)' });

      const unarchived = await act('owner', e.id, 'unarchive');
      expect(unarchived.body.results.status).toBe('fail');
      expect(unarchived.body.results.settings).toMatchObject({ archived: false, archived_at: null });
    });

    it('refuses every illegal transition with 400 naming the current state', async () => {
      const draft = await create('owner');
      const active = await create('owner');
      await act('owner', active.id, 'launch');
      const concluded = await create('owner');
      await act('owner', concluded.id, 'launch');
      await act('owner', concluded.id, 'force_conclude');
      const archivedDraft = await create('owner');
      await act('owner', archivedDraft.id, 'archive');

      const illegal: [string, string, string][] = [
        [draft.id, 'force_conclude', 'draft'],
        [draft.id, 'decide', 'draft'],
        [draft.id, 'unarchive', 'draft'],
        [active.id, 'launch', 'active'],
        [active.id, 'decide', 'active'],
        [active.id, 'archive', 'active'],
        [concluded.id, 'launch', 'concluded'],
        [concluded.id, 'force_conclude', 'concluded'],
        [archivedDraft.id, 'launch', 'draft (archived)'],
        [archivedDraft.id, 'archive', 'draft (archived)'],
      ];
      for (const [id, action, state] of illegal) {
        const r = await act('owner', id, action, action === 'decide' ? { success: true } : undefined);
        expect(r.status, `${action} on ${state}`).toBe(400);
        expect(r.body).toEqual({ status: 'error', type: 'invalid_transition', error: `cannot ${action} an experiment in state ${state}` });
      }
      // The refused actions changed nothing.
      expect((await api.call('GET', `${base}/${active.id}`, { auth: auth.owner })).body.results.status).toBe('active');
      // A draft can be archived; once unarchived it can launch.
      expect((await act('owner', archivedDraft.id, 'unarchive')).status).toBe(200);
      expect((await act('owner', archivedDraft.id, 'launch')).body.results.status).toBe('active');
    });

    it('needs can_update_restricted: analysts only on their own, consumers never', async () => {
      const owners = await create('owner');
      const r = await act('analyst', owners.id, 'launch');
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ status: 'error', error: 'launch needs can_update_restricted' });
      expect((await act('consumer', owners.id, 'archive')).status).toBe(403);
      const mine = await create('analyst');
      expect((await act('analyst', mine.id, 'launch')).body.results.status).toBe('active');
    });

    it('validates action bodies', async () => {
      const e = await create('owner');
      const extra = await act('owner', e.id, 'launch', { now: true });
      expect(extra.status).toBe(400);
      expect(extra.body.error).toBe("unknown field: 'now'");
      expect((await act('owner', e.id, 'launch', {})).status).toBe(200);
      await act('owner', e.id, 'force_conclude');
      const missing = await act('owner', e.id, 'decide');
      expect(missing.body).toEqual({ status: 'error', type: 'validation_error', error: 'request body must be a JSON object' });
      const wrong = await act('owner', e.id, 'decide', { success: 'yes' });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toMatch(/^'success': /);
      expect((await api.call('GET', `${base}/${e.id}`, { auth: auth.owner })).body.results.status).toBe('concluded');
    });

    it('two concurrent launches: exactly one wins, the other names the state it lost to', async () => {
      const e = await create('owner');
      const [a, b] = await Promise.all([act('owner', e.id, 'launch'), act('admin', e.id, 'launch')]);
      expect([a.status, b.status].sort()).toEqual([200, 400]);
      const loser = a.status === 400 ? a : b;
      expect(loser.body.error).toBe('cannot launch an experiment in state active');
    });
  });

  describe('soft delete', () => {
    it('hides the experiment from the list and every lookup, keeping the row', async () => {
      const e = await create('owner', { name: 'to delete' });
      expect((await list('owner')).some((x) => x.id === e.id)).toBe(true);
      const del = await api.call('DELETE', `${base}/${e.id}`, { auth: auth.owner });
      expect(del.status).toBe(200);
      expect(del.body.results.id).toBe(e.id);
      expect(del.body.results.deleted).toMatch(ISO);
      expect((await list('owner')).some((x) => x.id === e.id)).toBe(false);
      for (const [method, path] of [
        ['GET', `${base}/${e.id}`],
        ['DELETE', `${base}/${e.id}`],
        ['POST', `${base}/${e.id}/launch`],
      ]) {
        const r = await api.call(method!, path!, { auth: auth.owner });
        expect(r.status).toBe(404);
        expect(r.body).toEqual({ status: 'error', type: 'not_found', error: `experiment ${e.id} not found` });
      }
      const patch = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.owner, json: { name: 'x' } });
      expect(patch.status).toBe(404);
      const row = await findExperimentById(t.db, e.id);
      expect(row?.deleted).toBe(Date.parse(del.body.results.deleted));
    });

    it('needs can_update_restricted', async () => {
      const e = await create('owner');
      const r = await api.call('DELETE', `${base}/${e.id}`, { auth: auth.analyst });
      expect(r.status).toBe(403);
      expect((await list('owner')).some((x) => x.id === e.id)).toBe(true);
    });
  });

  describe('401, 403, 404, 400 on the path', () => {
    it('401 without or with wrong credentials', async () => {
      for (const a of [undefined, basicAuth(p.sa.username, 'wrong'), basicAuth('nobody', 'x'), 'Bearer abc']) {
        const r = await api.call('GET', base, { auth: a });
        expect(r.status).toBe(401);
        expect(r.body).toEqual({ status: 'error', error: 'Invalid credentials' });
      }
      // Authentication comes before looking at the path.
      expect((await api.call('GET', '/api/app/workspaces/abc/experiments')).status).toBe(401);
    });

    it('403 for the project secret, another project’s account, and an unknown workspace alike', async () => {
      const secret = await api.call('GET', base, { auth: basicAuth(p.api_secret) });
      expect(secret.status).toBe(403);
      expect(secret.body.error).toMatch(/service account credentials/);
      const outsider = await api.call('GET', base, { auth: other.basic });
      expect(outsider.body).toEqual({ status: 'error', error: `service account has no access to workspace ${p.workspace_id}` });
      const unknown = await api.call('GET', '/api/app/workspaces/99999999/experiments', { auth: auth.owner });
      expect(unknown.status).toBe(403);
      expect(unknown.body).toEqual({ status: 'error', error: 'service account has no access to workspace 99999999' });
      const write = await api.call('POST', base, { auth: other.basic, json: { name: 'x' } });
      expect(write.status).toBe(403);
    });

    it('400 for a workspace id that is not a positive integer', async () => {
      for (const ws of ['abc', '1.5', '0', '-1', '99999999999999999999']) {
        const r = await api.call('GET', `/api/app/workspaces/${ws}/experiments`, { auth: auth.owner });
        expect(r.status, ws).toBe(400);
        expect(r.body).toEqual({ status: 'error', type: 'validation_error', error: "'workspace_id' must be a positive integer" });
      }
    });

    it('403 for a workspace id beyond any stored id, as for any unknown workspace (not a 500)', async () => {
      const r = await api.call('GET', '/api/app/workspaces/2147483648/experiments', { auth: auth.owner });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ status: 'error', error: 'service account has no access to workspace 2147483648' });
    });

    it('404 for an unknown, malformed or other-workspace experiment id', async () => {
      const theirs = (await api.call('POST', `/api/app/workspaces/${other.workspace_id}/experiments`, { auth: other.basic, json: { name: 'theirs' } }))
        .body.results;
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', theirs.id]) {
        const r = await api.call('GET', `${base}/${id}`, { auth: auth.owner });
        expect(r.status).toBe(404);
        expect(r.body).toEqual({ status: 'error', type: 'not_found', error: `experiment ${id} not found` });
      }
      expect((await act('owner', theirs.id, 'archive')).status).toBe(404);
    });

    it('400 naming the region for a project of another data residency', async () => {
      const eu = await seedProject(t.db, { residency: 'EU' });
      const r = await api.call('GET', `/api/app/workspaces/${eu.workspace_id}/experiments`, { auth: eu.basic });
      expect(r.status).toBe(400);
      expect(r.body.type).toBe('wrong_region');
      expect(r.body.error).toMatch(/EU data residency/);
    });
  });

  describe('bad bodies', () => {
    const count = async () => (await list('owner')).length;

    it('malformed JSON, non-JSON media type, non-object JSON: 4xx in the shape, nothing written', async () => {
      const n = await count();
      const malformed = await api.call('POST', base, { auth: auth.owner, raw: '{"name": "x",', headers: { 'content-type': 'application/json' } });
      expect(malformed.body).toEqual({ status: 'error', type: 'validation_error', error: 'request body is not valid JSON' });
      const form = await api.call('POST', base, { auth: auth.owner, raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status).toBe(415);
      expect(form.body.type).toBe('unsupported_media_type');
      for (const raw of ['"x"', '42', 'null', '[]']) {
        const r = await api.call('POST', base, { auth: auth.owner, raw, headers: { 'content-type': 'application/json' } });
        expect(r.status, raw).toBe(400);
      }
      const empty = await api.call('POST', base, { auth: auth.owner });
      expect(empty.body.error).toBe('request body must be a JSON object');
      expect(await count()).toBe(n);
    });

    it('an 11 MB body gets 413, and the server keeps answering', async () => {
      const n = await count();
      const raw = JSON.stringify({ name: 'big', description: 'x'.repeat(11 * 1024 * 1024) });
      const r = await api.call('POST', base, { auth: auth.owner, raw, headers: { 'content-type': 'application/json' } });
      expect(r.status).toBe(413);
      expect(r.body).toEqual({ status: 'error', type: 'payload_too_large', error: 'Request Entity Too Large' });
      // A gzip bomb is cut off while inflating too.
      const bomb = zlib.gzipSync(Buffer.from(JSON.stringify({ name: 'b', description: ' '.repeat(5 * 1024 * 1024) })));
      const g = await api.call('POST', base, { auth: auth.owner, raw: bomb, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(g.status).toBe(413);
      expect(await count()).toBe(n);
    });

    it('accepts a gzipped body; refuses a corrupt one', async () => {
      const ok = await api.call('POST', base, {
        auth: auth.owner,
        raw: zlib.gzipSync(Buffer.from(JSON.stringify({ name: 'zipped' }))),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(ok.status).toBe(201);
      expect(ok.body.results.name).toBe('zipped');
      const bad = await api.call('POST', base, {
        auth: auth.owner,
        raw: Buffer.from('not gzip at all'),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.type).toBe('validation_error');
    });

    it('NUL characters and unpaired surrogates are refused (Postgres cannot store them), not a 500', async () => {
      const n = await count();
      const cases: [string, string][] = [
        ['{"name":"a\\u0000b"}', 'name'],
        ['{"name":"x","tags":["ok","\\ud800"]}', 'tags.1'],
        ['{"name":"x","settings":{"k\\u0000":1}}', 'settings.k\u0000'],
        ['{"name":"x","variants":[{"label":"\\udc00x"}]}', 'variants.0.label'],
      ];
      for (const [raw, at] of cases) {
        const r = await api.call('POST', base, { auth: auth.owner, raw, headers: { 'content-type': 'application/json' } });
        expect(r.status, raw).toBe(400);
        expect(r.body.error).toBe(`'${at}': contains a NUL character or an unpaired surrogate`);
      }
      const e = await create('owner', { name: 'emoji 🧪 ok' });
      expect(e.name).toBe('emoji 🧪 ok');
      const patch = await api.call('PATCH', `${base}/${e.id}`, { auth: auth.owner, raw: '{"description":"\\u0000"}', headers: { 'content-type': 'application/json' } });
      expect(patch.status).toBe(400);
      expect(await count()).toBe(n + 1);
    });

    it('JSON nested too deeply in settings is refused, not a 500', async () => {
      const raw = `{"name":"deep","settings":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
      const r = await api.call('POST', base, { auth: auth.owner, raw, headers: { 'content-type': 'application/json' } });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/nested deeper/);
    });
  });
});

/**
 * A workspace with 10k experiments lists in one response (streamed a page at a time), which
 * still matches the OpenAPI document; the pages hold exactly the one-query listing; and each
 * page reads its own rows in index order (no page sorts what is left of the workspace).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertExperiments, listLiveExperiments, liveExperimentPages } from '../../src/db/experiments.repo.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { syntheticExperiments } from '../helpers/experiments-fixture.js';
import { ContractClient } from '../helpers/openapi-contract.js';
import { capturedStatements, type Statement } from '../helpers/sql-statements.js';

const N = 10_000;

describe.each(dbKinds())('10k experiments on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  it('lists all of them, newest first, in one response', async () => {
    const p = await seedProject(t.db);
    const sa = await t.db('service_accounts').where({ username: p.sa.username }).first();
    const actor = { id: Number(sa.id), name: p.sa.username, email: null };
    const records = syntheticExperiments(p.workspace_id, actor, N);
    await insertExperiments(t.db, records);
    // A deleted one and another workspace's stay out.
    const other = await seedProject(t.db);
    await insertExperiments(t.db, syntheticExperiments(other.workspace_id, actor, 3));
    await insertExperiments(t.db, [{ ...syntheticExperiments(p.workspace_id, actor, 1)[0]!, deleted: Date.now() }]);

    const api = await ContractClient.load(app.url);
    const started = performance.now();
    const r = await api.call('GET', `/api/app/workspaces/${p.workspace_id}/experiments`, { auth: p.basic });
    const ms = performance.now() - started;
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(N);
    expect(r.body.results.map((e: { id: string }) => e.id)).toEqual(records.map((e) => e.id));
    expect(r.body.results[N - 1]).toMatchObject({ name: `experiment ${N - 1}`, creator_name: p.sa.username, can_update_restricted: true });
    // Generous: the point is one response in reasonable time, not a benchmark (see bench/experiments.bench.ts).
    expect(ms).toBeLessThan(15_000);
  });

  it('pages (keyset on created desc, id) add up to the one-query listing, ties in created included', async () => {
    const p = await seedProject(t.db);
    const sa = await t.db('service_accounts').where({ username: p.sa.username }).first();
    const actor = { id: Number(sa.id), name: p.sa.username, email: null };
    const now = Date.now();
    // Seven share one creation time, so pages of two split a tie more than once.
    const tied = syntheticExperiments(p.workspace_id, actor, 7).map((e) => ({ ...e, created: now }));
    await insertExperiments(t.db, [...tied, ...syntheticExperiments(p.workspace_id, actor, 4, now - 5000)]);
    const whole = (await listLiveExperiments(t.db, p.workspace_id)).map((e) => e.id);
    const pages: string[][] = [];
    for await (const page of liveExperimentPages(t.db, p.workspace_id, 2)) pages.push(page.map((e) => e.id));
    expect(whole).toHaveLength(11);
    expect(pages.flat()).toEqual(whole);
    expect(pages.map((pg) => pg.length)).toEqual([2, 2, 2, 2, 2, 1]);
  });

  it("reads each page in the listing's index order, without sorting the rest of the workspace", async () => {
    const p = await seedProject(t.db);
    const sa = await t.db('service_accounts').where({ username: p.sa.username }).first();
    const actor = { id: Number(sa.id), name: p.sa.username, email: null };
    await insertExperiments(t.db, syntheticExperiments(p.workspace_id, actor, 3000));
    if (kind === 'postgres') await t.db.raw('ANALYZE experiments');
    let listed = 0;
    const statements = await capturedStatements(t.db, /from [`"]experiments[`"]/i, async () => {
      for await (const page of liveExperimentPages(t.db, p.workspace_id, 500)) listed += page.length;
    });
    expect(listed).toBe(3000);
    expect(statements).toHaveLength(7);
    for (const { sql, bindings } of statements) {
      const plan = await explain(sql, bindings);
      expect(plan, plan).toContain('experiments_live_order');
      expect(plan, plan).not.toMatch(/sort|temp b-tree/i);
    }
  });

  /** The statement's plan as text: Postgres' JSON plan, or SQLite's query plan lines. */
  async function explain(sql: string, bindings: Statement['bindings']): Promise<string> {
    if (kind === 'postgres') return JSON.stringify((await t.db.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings)).rows[0]['QUERY PLAN']);
    return ((await t.db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings)) as { detail: string }[]).map((r) => r.detail).join('\n');
  }
});

/**
 * Reads right after a bulk load, before Postgres has analysed the tables: the planner then takes
 * every table for a handful of rows, and a plan that only works with statistics turns linear work
 * quadratic. Once, an export of 60k freshly migrated events walked all of the project's identity
 * links for each event (17 s instead of ~0.3 s). Here the export scan's own statements (captured
 * from knex) are explained with ANALYZE on such a table, and each identity lookup must be one probe
 * of identity_links' primary key. PostgreSQL only (runs whenever TEST_DATABASE_URL is set).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEventRows } from '../../src/store/event-rows.js';
import { createEventStore } from '../../src/store/create-event-store.js';
import type { EventStore } from '../../src/store/event-store.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { capturedStatements } from '../helpers/sql-statements.js';

const T0 = Date.UTC(2026, 0, 5);
const EVENTS = 6000;
const DEVICES = 600;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

describe.runIf(dbKinds().includes('postgres'))('PostgreSQL reads right after a bulk load (no planner statistics yet)', () => {
  let t: TestDb;
  let store: EventStore;
  const projectId = 1;
  beforeAll(async () => {
    t = await createTestDb('postgres');
    store = createEventStore({ EVENT_STORE_URL: undefined }, t.db);
    // Autovacuum could analyse these tables at any moment of the test; in its own schema it is kept off.
    for (const table of ['events', 'identity_links']) await t.db.raw(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    for (let from = 0; from < EVENTS; from += 2000) {
      const rows = emptyEventRows();
      for (let k = from; k < from + 2000; k++) {
        rows.event.push('e');
        rows.distinctId.push(`d${k % DEVICES}`);
        rows.time.push(T0 + k * 1000);
        rows.insertId.push(`i${k}`);
        rows.properties.push('{}');
        rows.deviceId.push(`d${k % DEVICES}`);
      }
      for (let k = from / 10; k < (from + 2000) / 10; k++) rows.links.push({ deviceId: `d${k % DEVICES}`, userId: `u${k}` });
      await store.writeBatch({ projectId, source: 'import', rows, now: T0 });
    }
    const analysed = await t.db.raw(`SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname IN ('events', 'identity_links') AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)`);
    expect(analysed.rows).toEqual([]);
  });
  afterAll(async () => t?.destroy());

  it('the export scan resolves each event by one primary-key probe of identity_links', async () => {
    let scanned = 0;
    const resolved = new Set<string>();
    const statements = await capturedStatements(t.db, /FROM events e/, async () => {
      for await (const page of store.scan({ projectId, fromMs: T0, toMs: T0 + EVENTS * 1000, pageSize: 1000 })) {
        scanned += page.length;
        for (const e of page) resolved.add(e.resolvedId);
      }
    });
    expect(scanned).toBe(EVENTS);
    // Every device got linked (600 links to 600 devices, first link wins): no event keeps its own id.
    expect([...resolved].every((id) => id.startsWith('u'))).toBe(true);
    expect(statements.length).toBeGreaterThan(1);

    const last = statements.at(-1)!;
    const explained = await t.db.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${last.sql}`, last.bindings);
    const plan = nodes(explained.rows[0]['QUERY PLAN'][0].Plan as PlanNode);
    const linkScans = plan.filter((n) => n['Relation Name'] === 'identity_links');
    expect(linkScans.length).toBeGreaterThan(0);
    for (const scan of linkScans) {
      expect(scan['Index Name']).toBe('identity_links_pkey');
      expect(scan['Index Cond']).toMatch(/device_id/);
      expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
    }
    expect(plan.every((n) => (n['Rows Removed by Join Filter'] ?? 0) === 0)).toBe(true);
  });

  it('a device lookup uses the primary key, not the user index', async () => {
    const explained = await t.db.raw(`EXPLAIN (FORMAT JSON) SELECT user_id FROM identity_links WHERE project_id = ? AND device_id = ?`, [projectId, 'd7']);
    const plan = nodes(explained.rows[0]['QUERY PLAN'][0].Plan as PlanNode);
    expect(plan.map((n) => n['Index Name']).filter(Boolean)).toEqual(['identity_links_pkey']);
    expect(await store.identityOf(projectId, '$device:d7')).toEqual({ userId: 'u7', deviceIds: ['d7'] });
  });
});

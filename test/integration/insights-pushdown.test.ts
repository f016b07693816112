/**
 * Insights are pushed down to the event store when the store can take `where` and `on`
 * (where-plan.ts) and fall back to evaluating over a scan otherwise. Both paths must give the
 * same report, for every type: each case below pairs a pushable expression with an equivalent
 * one the store cannot take (arithmetic on a property forces the fallback).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../../src/accounts/accounts.service.js';
import { parseDay } from '../../src/domain/time-buckets.js';
import { parseExpression } from '../../src/domain/where-expression.js';
import { runInsights } from '../../src/readback/insights.js';
import type { ReportType } from '../../src/store/event-store.js';
import { toEventRows } from '../../src/store/event-rows.js';
import { canPushDown } from '../../src/store/where-plan.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { eventStoreOf } from '../helpers/events.js';

const DAY = 86_400_000;
const FROM = parseDay('2024-03-01')!;

describe.each(dbKinds())('insights pushed down vs evaluated on %s', (kind) => {
  let t: TestDb;
  let pid: number;
  beforeAll(async () => {
    t = await createTestDb(kind);
    pid = (await createProject(t.db, { name: 'pushdown' })).id;
    const events = Array.from({ length: 90 }, (_, i) => {
      const anonymous = i % 2 === 1;
      const device = `dev${i % 7}`;
      return {
        event: i % 3 ? 'open' : 'buy',
        distinctId: anonymous ? `$device:${device}` : `user${i % 5}`,
        time: FROM + (i % 9) * DAY + i * 60_000,
        insertId: `p-${i}`,
        properties: { n: i % 6, os: ['web', 'ios', 'android'][i % 3], tags: i % 4 ? ['a', 'b'] : [] },
        ...(anonymous ? { deviceId: device } : {}),
        ...(i % 4 === 0 ? { link: { deviceId: device, userId: `user${i % 5}` } } : {}),
      };
    });
    await eventStoreOf(t.db).writeBatch({ projectId: pid, source: 'import', rows: toEventRows(events), now: FROM });
  });
  afterAll(async () => t?.destroy());

  const pairs = [
    { where: 'properties["n"] > 2', fallback: 'properties["n"] + 0 > 2' },
    { where: 'properties["os"] != "web"', on: 'properties["tags"]', fallback: 'string(properties["os"]) != "web"' },
    { where: 'properties["n"] == 1 or properties["n"] == 4', on: 'os', fallback: 'properties["n"] % 3 == 1' },
  ];
  const types: ReportType[] = ['general', 'unique', 'average'];

  for (const type of types)
    it(`${type}: the store's query and the evaluator agree`, async () => {
      const range = { fromMs: FROM, toMs: FROM + 10 * DAY };
      for (const p of pairs) {
        const on = p.on ? parseExpression(p.on.startsWith('properties') ? p.on : `properties["${p.on}"]`) : undefined;
        const where = parseExpression(p.where);
        const fallback = parseExpression(p.fallback);
        expect(canPushDown(where, on)).toBe(true);
        expect(canPushDown(fallback, on)).toBe(false);
        const q = { projectId: pid, range, unit: 'day' as const, type, on, limit: 100 };
        const pushed = await runInsights(t.db, eventStoreOf(t.db), { ...q, where });
        const evaluated = await runInsights(t.db, eventStoreOf(t.db), { ...q, where: fallback });
        expect(pushed, p.where).toEqual(evaluated);
        expect(Object.keys(pushed.values).length).toBeGreaterThan(0);
      }
    });
});

/**
 * Hostile tenant, finding 4: user strings that name an Object.prototype key ("toString",
 * "constructor", "hasOwnProperty", "__proto__") must be looked up as own keys everywhere — they are
 * refused with a 4xx, never matched against a function — and one import with a bad stored
 * schedule must not keep the scheduler from scheduling every other project's imports. Also the
 * scheduler's return after downtime, and a tick missed while it runs: the latest missed slot runs once.
 */
import { describe, expect, it } from 'vitest';
import { call, createSourceAndImport } from '../helpers/warehouse.js';
import { scheduleCron } from '../../src/domain/sync-schedule.js';
import { negotiateBatchUpload } from '../../src/domain/batch-format.js';
import { silentLogger } from '../../src/lib/logger.js';
import { SyncScheduler } from '../../src/warehouse/sync-scheduler.js';
import { tenantApp } from './tenant-app.js';

const PROTO_KEYS = ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf', 'isPrototypeOf'];

describe('own-property lookups of user strings', () => {
  it('schedules naming Object.prototype keys are invalid', () => {
    for (const k of PROTO_KEYS) expect(scheduleCron(k), k).toMatchObject({ ok: false });
  });

  it('a Content-Type naming an Object.prototype key does not pick a format', () => {
    for (const k of PROTO_KEYS) {
      const out = negotiateBatchUpload({ type: 'events', contentType: k, format: undefined, contentEncoding: undefined });
      expect(out, k).toMatchObject({ ok: false, status: 415 });
    }
  });
});

describe('hostile schedules and source types over HTTP, and the scheduler', () => {
  const w = tenantApp({}, { source: true });

  const importBody = (schedule: string) => ({
    import_type: 'events',
    table_params: { table: 'ev' },
    sync_mode: 'full_sync',
    schedule,
    event_name: 'e',
    time_column_name: 'ts',
    user_column_name: 'u',
  });

  it('refuses schedule "toString" (and the other prototype keys) on create and on PATCH with a 400', async () => {
    const created = await call(w.api, 'POST', '', w.src.sourceBody());
    expect(created.status).toBe(200);
    const sourceId = created.body.results.id;
    for (const k of PROTO_KEYS) {
      const res = await call(w.api, 'POST', '/imports', { warehouse_source_id: sourceId, ...importBody(k) });
      expect(res.status, k).toBe(400);
      expect(res.body.status).toBe('error');
      expect(res.body.error).toMatch(/schedule/);
    }
    const ok = await call(w.api, 'POST', '/imports', { warehouse_source_id: sourceId, ...importBody('daily') });
    expect(ok.status).toBe(200);
    for (const k of PROTO_KEYS) {
      const res = await call(w.api, 'PATCH', `/imports/${ok.body.results.id}`, { schedule: k });
      expect(res.status, k).toBe(400);
    }
  });

  it('refuses a source type naming an Object.prototype key with a 400, not a 500', async () => {
    for (const k of PROTO_KEYS) {
      const res = await call(w.api, 'POST', '', { type: k, name: 'x', config: {} });
      expect(res.status, k).toBe(400);
      expect(res.body.error).toMatch(/type/);
    }
  });

  it('one import with a bad stored schedule does not stop the others from being scheduled', async () => {
    const bad = await createSourceAndImport(w.api, w.src.sourceBody('bad'), importBody('0 0 1 1 *'));
    const good = await createSourceAndImport(w.api, w.src.sourceBody('good'), importBody('0 0 1 1 *'));
    // A row stored before validation was tightened (or written by an older release).
    await w.t.db('warehouse_imports').where({ id: bad.importId }).update({ schedule: 'toString' });
    const scheduler = new SyncScheduler({ db: w.t.db, queues: w.app.queues, log: silentLogger, refreshMs: 60_000, timezone: 'UTC' });
    try {
      await scheduler.refresh();
      expect(scheduler.scheduled()).toContain(good.importId);
      expect(scheduler.scheduled()).not.toContain(bad.importId);
    } finally {
      await scheduler.stop();
    }
  });

  it('a scheduler back from downtime runs the latest missed slot once, not once per slot and not never', async () => {
    const { importId } = await createSourceAndImport(w.api, w.src.sourceBody('hourly'), importBody('hourly'));
    const hour = 3600_000;
    // The import last changed 3 h ago; the scheduler was down since: three hourly slots were missed.
    await w.t.db('warehouse_imports').where({ id: importId }).update({ updated_at: Date.now() - 3 * hour - 60_000 });
    const latest = Math.floor(Date.now() / hour) * hour;
    const runsOf = () => w.t.db('sync_runs').where({ import_id: importId }).orderBy('slot');
    for (let round = 0; round < 2; round++) {
      const scheduler = new SyncScheduler({ db: w.t.db, queues: w.app.queues, log: silentLogger, refreshMs: 60_000, timezone: 'UTC' });
      await scheduler.start();
      await scheduler.stop();
      const runs = await runsOf();
      expect(runs.map((r) => [Number(r.slot), r.trigger]), `round ${round}`).toEqual([[latest, 'scheduled']]);
    }
  });

  it('a slot whose tick was missed while the scheduler runs (a stall, a paused VM) runs at the next refresh, once', async () => {
    const { importId } = await createSourceAndImport(w.api, w.src.sourceBody('yearly'), importBody('0 0 1 1 *'));
    const newYear = Date.UTC(2025, 0, 1);
    await w.t.db('warehouse_imports').where({ id: importId }).update({ updated_at: newYear - 40_000 });
    let now = newYear - 10_000;
    const scheduler = new SyncScheduler({ db: w.t.db, queues: w.app.queues, log: silentLogger, refreshMs: 60_000, timezone: 'UTC', clock: () => now });
    const slots = async () => (await w.t.db('sync_runs').where({ import_id: importId })).map((r) => Number(r.slot));
    try {
      await scheduler.refresh();
      expect(await slots()).toEqual([]);
      // New Year's tick never came (node-cron drops a tick more than a second late).
      now = newYear + 30_000;
      await scheduler.refresh();
      await scheduler.refresh();
      expect(await slots()).toEqual([newYear]);
    } finally {
      await scheduler.stop();
    }
  });
});

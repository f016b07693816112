/**
 * Two scheduler PROCESSES on one database and Redis, an import on a seconds-level cron (every
 * second stands in for "every minute"): every slot gets exactly one run row — each slot is attempted by
 * both processes and only one of them creates it — and a paused import stops getting runs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedProject } from '../helpers/accounts.js';
import { dbKinds } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { serviceEnv, spawnBin } from '../helpers/spawn.js';
import { sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, type Api } from '../helpers/warehouse.js';
import { workerProcessesFixture } from '../helpers/worker-processes.js';

const EVERY_MS = 1000;

interface SlotLine {
  slot: string;
  outcome: string;
}

function slotLines(output: string, importId: number): SlotLine[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; importId?: number; slot?: string; outcome?: string })
    .filter((l) => l.importId === importId && l.msg?.startsWith('scheduler: slot'))
    .map((l) => ({ slot: l.slot!, outcome: l.outcome! }));
}

describe.each(crossKinds(dbKinds()))('two schedulers on %s, queues on %s', (kind, redisKind) => {
  const w = workerProcessesFixture(kind, redisOverrides(redisKind));
  let src: WarehouseSourceHandle;

  beforeAll(async () => {
    src = await sqliteSourceFixture.create();
    w.sources.push(src);
    await src.createTable({ name: 'ev', columns: [{ name: 'ts', type: 'timestamp', notNull: true }, { name: 'u', type: 'text' }] });
  });

  it('fire every slot exactly once, and skip a paused import', async () => {
    const { t, app, procs } = w;
    const p = await seedProject(t.db);
    const api: Api = { url: app.url, basic: p.basic, projectId: p.id };
    const { importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: { table: 'ev' },
      sync_mode: 'full_sync',
      schedule: '* * * * * *',
      event_name: 'e',
      time_column_name: 'ts',
      user_column_name: 'u',
    });
    const env = serviceEnv(t.url, app.config, {
      SCHEDULER_REFRESH_SEC: '0.5',
      LOG_LEVEL: 'info',
    });
    procs.push(spawnBin('scheduler', env), spawnBin('scheduler', env));
    await Promise.all(procs.map((s) => s.waitFor(/"msg":"scheduler started"/, 30_000)));
    const bothUp = Date.now();
    await new Promise((r) => setTimeout(r, 6.5 * EVERY_MS));

    const paused = await call(api, 'PATCH', `/imports/${importId}`, { paused: true });
    expect(paused.status).toBe(200);
    const pausedAt = Date.now();
    await new Promise((r) => setTimeout(r, 2.5 * EVERY_MS));
    await Promise.all(procs.map((s) => s.kill('SIGTERM')));

    const runs = await t.db('sync_runs').where({ import_id: importId }).orderBy('slot');
    const slots = runs.map((r) => Number(r.slot));
    // One row per slot, one slot per second with no gap, none after the pause took effect.
    expect(new Set(slots).size).toBe(slots.length);
    expect(slots.length).toBeGreaterThanOrEqual(6);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBe(EVERY_MS);
    expect(slots[slots.length - 1]!).toBeLessThanOrEqual(pausedAt + 1000);
    expect(runs.every((r) => r.trigger === 'scheduled')).toBe(true);
    // The first slot queued a run; later slots found it still queued (no worker here) and were
    // recorded as skipped, so history shows every slot.
    expect(runs[0]!.status).toBe('QUEUED');
    for (const r of runs.slice(1)) expect([r.status, r.error]).toEqual(['CANCELLED', expect.stringMatching(/^skipped: the previous sync/)]);

    // Exactly one process wrote each slot; the other, when it was on time for it, found it taken.
    // A scheduler on a loaded machine can miss a one-second tick (a CI run saw it once) — the
    // other covers that slot, which is what two are for — but the race must have been run.
    const [a, b] = procs.map((s) => slotLines(s.output(), importId));
    const shared = runs.filter((r) => Number(r.slot) > bothUp).map((r) => new Date(Number(r.slot)).toISOString());
    expect(shared.length).toBeGreaterThanOrEqual(5);
    let contested = 0;
    for (const slot of shared) {
      const outcomes = [...a!, ...b!].filter((l) => l.slot === slot).map((l) => l.outcome).sort();
      const writers = outcomes.filter((o) => o !== 'taken');
      expect(writers, slot).toHaveLength(1);
      expect(['created', 'skipped']).toContain(writers[0]);
      expect(outcomes.length, slot).toBeLessThanOrEqual(2);
      if (outcomes.length === 2) contested += 1;
    }
    expect(contested).toBeGreaterThanOrEqual(shared.length - 1);
  });
});

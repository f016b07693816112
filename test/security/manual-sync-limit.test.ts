/**
 * Abuse limit: manual syncs per import per rolling hour (MANUAL_SYNC_PER_HOUR, default 5). Beyond:
 * 429 with Retry-After and {status:"error",error}; returning a sync already queued or running
 * does not count; the limit lives in SQL, so every web process enforces the same one.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { dbKinds } from '../helpers/db.js';
import { call, createSourceAndImport } from '../helpers/warehouse.js';
import { tenantApp } from './tenant-app.js';

it('defaults to 5 per hour', () => {
  expect(loadConfig({ NODE_ENV: 'test', SECRETS_KEY: 'ab'.repeat(32) }).MANUAL_SYNC_PER_HOUR).toBe(5);
});

describe.each(dbKinds())('manual sync limit on %s', (kind) => {
  const w = tenantApp({ MANUAL_SYNC_PER_HOUR: 2 }, { kind, source: true });

  it('429 with Retry-After past the limit; returning the active sync does not count; the hour rolls', async () => {
    const { t, app, api, src } = w;
    const { importId } = await createSourceAndImport(api, src.sourceBody(), {
      import_type: 'events',
      table_params: { table: 'ev' },
      sync_mode: 'full_sync',
      schedule: 'api_only',
      event_name: 'e',
      time_column_name: 'ts',
      user_column_name: 'u',
    });
    const sync = () => call(api, 'PUT', `/imports/${importId}/manual-sync`);
    // No worker here: a run stays QUEUED until the test ends it.
    const finish = () => t.db('sync_runs').where({ import_id: importId }).whereIn('status', ['QUEUED', 'RUNNING']).update({ status: 'SUCCEEDED', finished_at: Date.now() });

    const first = await sync();
    expect(first.status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const again = await sync();
      expect(again.status).toBe(200);
      expect(again.body.results.run_id).toBe(first.body.results.run_id);
    }
    await finish();
    expect((await sync()).status).toBe(200);
    await finish();

    const res = await fetch(`${app.url}/api/app/projects/${api.projectId}/warehouse-sources/imports/${importId}/manual-sync`, { method: 'PUT', headers: { authorization: api.basic } });
    expect(res.status).toBe(429);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3000);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(await res.json()).toMatchObject({ status: 'error', error: expect.stringMatching(/limit is 2/) });
    expect(await t.db('sync_runs').where({ import_id: importId }).count({ n: '*' }).first()).toMatchObject({ n: kind === 'postgres' ? '2' : 2 });

    // An hour later the oldest one no longer counts.
    const oldest = await t.db('sync_runs').where({ import_id: importId }).orderBy('created_at').first();
    await t.db('sync_runs').where({ id: oldest.id }).update({ created_at: Date.now() - 3600_000 - 1000 });
    expect((await sync()).status).toBe(200);
  });
});

/**
 * /metrics labels routes by their pattern (`/api/app/projects/:pid/…`), never a literal id: a
 * tenant probing ids must not create one time series per id (unbounded cardinality), and ids must
 * not show on /metrics.
 */
import { describe, expect, it } from 'vitest';
import { basicAuth } from '../helpers/accounts.js';
import { tenantApp } from './tenant-app.js';

describe('/metrics route labels', () => {
  const w = tenantApp();

  it('uses route patterns for matched, refused and unknown paths under parameterised mounts', async () => {
    const { app, p } = w;
    const get = (path: string, auth = p.basic) => fetch(`${app.url}${path}`, { headers: { authorization: auth } }).then((r) => r.status);
    expect(await get(`/api/app/projects/${p.id}/warehouse-sources/imports/987654/history`)).toBe(404);
    expect(await get(`/api/app/projects/${p.id}/warehouse-sources`)).toBe(200);
    expect(await get(`/api/app/projects/876543/warehouse-sources`)).toBe(403);
    expect(await get(`/api/app/projects/${p.id}/batch-imports/00000000-0000-0000-0000-000000765432`)).toBe(404);
    expect(await get(`/api/app/projects/${p.id}/lookup-tables/654321`)).toBeGreaterThanOrEqual(400);
    expect(await get(`/api/app/workspaces/543210/experiments`)).toBeGreaterThanOrEqual(400);
    expect(await get(`/migrate/migrations/00000000-0000-0000-0000-000000432100`, basicAuth(p.token))).toBe(404);
    expect(await get(`/no/such/path/321098`)).toBe(404);

    const res = await fetch(`${app.url}/metrics`, { headers: { authorization: basicAuth('operator', 'operator-password') } });
    expect(res.status).toBe(200);
    const text = await res.text();
    const routes = new Set([...text.matchAll(/http_request_duration_seconds_count\{[^}]*route="([^"]*)"/g)].map((m) => m[1]!));
    for (const id of ['987654', '876543', '765432', '654321', '543210', '432100', '321098', String(p.id)]) {
      for (const r of routes) expect(r, `route label ${r}`).not.toContain(`/${id}`);
    }
    expect(routes).toContain('/api/app/projects/:pid/warehouse-sources/imports/:importId/history');
    expect(routes).toContain('/api/app/projects/:pid/warehouse-sources');
    expect(routes).toContain('/migrate/migrations/:id');
    expect(routes).toContain('unmatched');
  });
});

/**
 * Batch imports over HTTP with a real worker runtime in this process, on both databases:
 * formats (NDJSON, gzip JSON array, CSV), record types (events, people, groups), rejection
 * reports, the ids-only job payload as stored in Redis, and every refusal (401/403/404/413/415/400).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, pageEvents } from '../helpers/events.js';
import { basicAuth, seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { crossKinds, redisOverrides } from '../helpers/redis-kinds.js';
import { body, gzip, ndjsonEvents, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';

describe.each(crossKinds(dbKinds()))('batch imports API on %s, queues on %s', (kind, redisKind) => {
  let t: TestDb;
  let app: TestApp;
  let worker: InProcessWorker;
  let owner: SeededProject;
  let other: SeededProject;
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'batch-uploads-'));

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ...redisOverrides(redisKind), UPLOAD_DIR: uploads, BATCH_IMPORT_MAX_BYTES: 2_000_000 });
    worker = await startInProcessWorker(t.db, app.config);
    owner = await seedProject(t.db, { role: 'owner' });
    other = await seedProject(t.db, { role: 'owner' });
  });
  afterAll(async () => {
    await worker.close();
    await app.queues.queues['batch-import'].obliterate({ force: true });
    await app.close();
    await t.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  const post = (p: SeededProject, query: string, data: Buffer, headers: Record<string, string>, auth = p.basic) =>
    fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?${query}`, {
      method: 'POST',
      headers: { authorization: auth, ...headers },
      body: body(data),
    });
  const get = (p: SeededProject, id: string, auth = p.basic) =>
    fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/${id}`, { headers: { authorization: auth } });
  const finished = (p: SeededProject, id: string) =>
    until(async () => {
      const r = (await (await get(p, id)).json()) as { results: Record<string, any> };
      return ['succeeded', 'failed'].includes(r.results.status) ? r.results : undefined;
    });

  it('imports NDJSON events, reports rejections by file position, and stores the job payload as ids only', async () => {
    const good = ndjsonEvents(4500);
    const bad = Buffer.from('{"event":"x","properties":{"distinct_id":"a"}}\nnot json at all\n{"event":"","properties":{"time":1,"distinct_id":"b"}}\n');
    const res = await post(owner, 'type=events', Buffer.concat([good, bad]), { 'content-type': 'application/x-ndjson' });
    expect(res.status).toBe(202);
    const created = (await res.json()) as { status: string; results: Record<string, any> };
    expect(created).toMatchObject({ status: 'ok', results: { status: 'queued', type: 'events', format: 'ndjson', records_total: 4503 } });
    expect(created.results).not.toHaveProperty('file_path');

    // The job as Redis holds it: the payload is the run id and nothing else.
    const jobKey = `${app.queues.prefix}:batch-import:${created.results.job_id}`;
    const stored = await app.queues.connection.hgetall(jobKey);
    if (stored.data) {
      expect(JSON.parse(stored.data)).toEqual({ importId: created.results.id });
      const everything = JSON.stringify(stored);
      for (const secret of [owner.sa.secret, owner.api_secret, owner.token, 'page_view', 'user-1']) expect(everything).not.toContain(secret);
    } else {
      // Already processed and trimmed? Not with the retention settings: fail loudly.
      expect(stored).toHaveProperty('data');
    }

    const run = await finished(owner, created.results.id);
    expect(run).toMatchObject({ status: 'succeeded', percent: 100, records_done: 4503, num_imported: 4500, num_deduplicated: 0, num_rejected: 3 });
    expect(run.rejected_sample.map((r: { index: number }) => r.index)).toEqual([4500, 4501, 4502]);
    expect(run.rejected_sample[0]).toMatchObject({ field: 'properties.time' });
    expect(run.rejected_sample[1].message).toMatch(/not valid JSON/);
    expect(run.rejected_sample[2]).toMatchObject({ field: 'event' });
    expect(run.log.join('\n')).toMatch(/succeeded: 4500 imported/);
    // Unsplit: one partition, and the worker that ran it by name, as sync history shows it.
    expect(run).toMatchObject({ partitions: { total: 1, done: 1 }, workers: [expect.stringMatching(/^.+:\d+$/)] });
    expect(await countEvents(t.db, owner.id)).toBe(4500);
    const [first] = await pageEvents(t.db, { projectId: owner.id, fromMs: 0, toMs: Date.now(), limit: 1 });
    expect(first!.properties).toMatchObject({ $import: true, $batch_import_id: created.results.id });
    const job = await worker.queues.getJob('batch-import', created.results.job_id);
    expect(job!.progress).toMatchObject({ percent: 100 });
    const { logs } = await worker.queues.queues['batch-import'].getJobLogs(created.results.job_id);
    expect(logs.join('\n')).toMatch(/started: 4503 records/);
    // The uploaded file is gone once the run finished.
    expect(fs.readdirSync(path.join(uploads, String(owner.id)))).toEqual([]);
  });

  it('imports a gzipped JSON array (sniffed) and counts a replay as duplicates', async () => {
    const events = Array.from({ length: 2500 }, (_, i) => ({ event: 'buy', properties: { time: 1_700_000_000 + i, distinct_id: `d${i}`, note: 'a "quoted", [bracketed] value\\' } }));
    const file = gzip(Buffer.from(JSON.stringify(events, null, 1)));
    const first = (await (await post(other, 'type=events', file, { 'content-type': 'application/json' })).json()) as { results: Record<string, any> };
    expect(first.results).toMatchObject({ format: 'json', compression: 'gzip', records_total: 2500 });
    expect(await finished(other, first.results.id)).toMatchObject({ status: 'succeeded', num_imported: 2500 });
    const again = (await (await post(other, 'type=events&format=json', file, { 'content-type': 'application/gzip' })).json()) as { results: Record<string, any> };
    expect(await finished(other, again.results.id)).toMatchObject({ status: 'succeeded', num_imported: 0, num_deduplicated: 2500 });
    expect(await countEvents(t.db, other.id)).toBe(2500);
  });

  it('imports CSV events with typed cells and ISO times', async () => {
    const p = await seedProject(t.db);
    const csv = 'event,time,distinct_id,plan,seats,trial\nsignup,2024-03-01T10:00:00Z,u1,pro,5,true\nlogin,1709287200,u2,,3,false\nbroken,not-a-time,u3,x,1,true\n';
    const res = await post(p, 'type=events', Buffer.from(csv), { 'content-type': 'text/csv' });
    expect(res.status).toBe(202);
    const { results } = (await res.json()) as { results: Record<string, any> };
    const run = await finished(p, results.id);
    expect(run).toMatchObject({ status: 'succeeded', num_imported: 2, num_rejected: 1 });
    expect(run.rejected_sample).toEqual([expect.objectContaining({ index: 2, field: 'properties.time' })]);
    const stored = await pageEvents(t.db, { projectId: p.id, fromMs: 0, toMs: Date.now(), limit: 10 });
    const signup = stored.find((e) => e.event === 'signup')!;
    expect(signup.time).toBe(Date.parse('2024-03-01T10:00:00Z'));
    expect(signup.properties).toMatchObject({ plan: 'pro', seats: 5, trial: true });
    expect(stored.find((e) => e.event === 'login')!.properties).not.toHaveProperty('plan');
  });

  it('imports people and groups profiles through the profile write path', async () => {
    const p = await seedProject(t.db);
    const people = '{"$distinct_id":"u1","$set":{"plan":"pro"}}\n{"$distinct_id":"u2","$set":{"plan":"free"}}\n{"$set":{"x":1}}\n';
    const r1 = (await (await post(p, 'type=people', Buffer.from(people), { 'content-type': 'application/x-ndjson' })).json()) as { results: Record<string, any> };
    expect(await finished(p, r1.results.id)).toMatchObject({ status: 'succeeded', num_imported: 2, num_rejected: 1 });
    const groups = '$group_key,$group_id,name,employees\ncompany,c1,Acme,40\n';
    const r2 = (await (await post(p, 'type=groups', Buffer.from(groups), { 'content-type': 'text/csv' })).json()) as { results: Record<string, any> };
    expect(await finished(p, r2.results.id)).toMatchObject({ status: 'succeeded', num_imported: 1 });
    const profile = await t.db('profiles').where({ project_id: p.id, distinct_id: 'u1' }).first();
    expect(JSON.parse(typeof profile.properties === 'string' ? profile.properties : JSON.stringify(profile.properties))).toMatchObject({ plan: 'pro' });
    const group = await t.db('group_profiles').where({ project_id: p.id, group_key: 'company', group_id: 'c1' }).first();
    expect(JSON.stringify(group.properties)).toContain('Acme');
  });

  it('lists runs and refuses what it must: 400, 401, 403, 404, 413, 415', async () => {
    const list = (await (await fetch(`${app.url}/api/app/projects/${owner.id}/batch-imports`, { headers: { authorization: owner.basic } })).json()) as { results: unknown[] };
    expect(list.results.length).toBeGreaterThanOrEqual(1);
    for (const limit of ['abc', '0', '201', '2.5']) {
      const refused = await fetch(`${app.url}/api/app/projects/${owner.id}/batch-imports?limit=${limit}`, { headers: { authorization: owner.basic } });
      expect(refused.status).toBe(400);
    }

    const nd = { 'content-type': 'application/x-ndjson' };
    expect((await post(owner, 'type=events', Buffer.from('{}'), nd, basicAuth('nobody', 'wrong'))).status).toBe(401);
    const analyst = await seedProject(t.db, { role: 'analyst' });
    expect((await post(analyst, 'type=events', Buffer.from('{}'), nd)).status).toBe(403);
    // Another project's credentials.
    expect((await post(owner, 'type=events', Buffer.from('{}'), nd, other.basic)).status).toBe(403);
    expect((await get(owner, '00000000-0000-0000-0000-000000000000')).status).toBe(404);
    expect((await get(owner, 'not-an-id')).status).toBe(404);
    // A run of another project, asked for under this one.
    const theirs = (await (await fetch(`${app.url}/api/app/projects/${other.id}/batch-imports`, { headers: { authorization: other.basic } })).json()) as { results: { id: string }[] };
    expect((await get(owner, theirs.results[0]!.id)).status).toBe(404);

    const bad = async (query: string, data: Buffer, headers: Record<string, string>) => {
      const res = await post(owner, query, data, headers);
      const json = (await res.json()) as { status: string; error: string };
      expect(json.status).toBe('error');
      return [res.status, json.error] as const;
    };
    expect((await bad('type=events', Buffer.from('{}'), { 'content-type': 'application/octet-stream' }))[0]).toBe(415);
    // One message for every encoding a stored upload cannot be read back in (deflate included).
    for (const encoding of ['deflate', 'br']) {
      expect(await bad('type=events', Buffer.from('{}\n'), { ...nd, 'content-encoding': encoding })).toEqual([415, `unsupported Content-Encoding '${encoding}' (use gzip or none)`]);
    }
    expect((await bad('type=widgets', Buffer.from('{}'), nd))[0]).toBe(400);
    expect((await bad('type=events&format=xml', Buffer.from('{}'), nd))[0]).toBe(400);
    expect(await bad('type=events', Buffer.from('[{"event":"a"} {"event":"b"}]'), { 'content-type': 'application/json' })).toEqual([400, expect.stringMatching(/JSON array/)]);
    expect(await bad('type=events', Buffer.from('[{"event":"a"},'), { 'content-type': 'application/json' })).toEqual([400, expect.stringMatching(/not closed/)]);
    expect(await bad('type=events', Buffer.from('event,distinct_id\na,b\n'), { 'content-type': 'text/csv' })).toEqual([400, expect.stringMatching(/time/)]);
    expect((await bad('type=events', Buffer.from(''), nd))[0]).toBe(400);
    expect((await bad('type=events', Buffer.from('\n\n'), nd))[0]).toBe(400);
    expect((await bad('type=events', Buffer.from('not gzip'), { ...nd, 'content-encoding': 'gzip' }))[0]).toBe(400);
    expect((await bad('type=events', gzip(Buffer.from('{"a":1}\n')).subarray(0, 12), nd))[0]).toBe(400);
    // Over BATCH_IMPORT_MAX_BYTES (2 MB here): as sent, and as a small gzip that inflates past it.
    expect((await bad('type=events', Buffer.alloc(2_100_000, 0x20), nd))[0]).toBe(413);
    expect((await bad('type=events', gzip(Buffer.alloc(5_000_000, 0x20)), nd))[0]).toBe(413);
    // Nothing of the refused uploads is left behind.
    expect(fs.readdirSync(path.join(uploads, String(owner.id)))).toEqual([]);
  });

  it('refuses a project of another data residency with 400 naming its region, and stores nothing', async () => {
    const eu = await seedProject(t.db, { residency: 'EU' });
    const res = await post(eu, 'type=events', Buffer.from('{"event":"a","properties":{"time":1700000000,"distinct_id":"u"}}\n'), { 'content-type': 'application/x-ndjson' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ status: 'error', type: 'validation_error', error: expect.stringMatching(/residency EU.*EU/) });
    expect(await t.db('batch_imports').where({ project_id: eu.id }).first()).toBeUndefined();
  });
});

/**
 * Partitioned batch imports against real Redis/BullMQ and a real store: an uncompressed NDJSON
 * file over SYNC_PARTITION_ROWS records is split into byte ranges of whole lines (a flow: one
 * parent, one child per range) that two workers share. Every valid record is stored once, and a
 * rejected record is reported at its position in the whole file, whichever range read it. A
 * gzipped file (cannot be entered mid-stream) is imported whole, as before.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBatchImport } from '../../src/db/batch-imports.repo.js';
import { listPartitions } from '../../src/db/run-partitions.repo.js';
import { batchImportPartJobId } from '../../src/queue/job-ids.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { countEvents } from '../helpers/events.js';
import { body, generatedEvent, gzip, startInProcessWorker, until, type InProcessWorker } from '../helpers/job-platform.js';

const N = 6000;
const BAD = new Set([10, 2500, 5999]);

/** N lines; the ones in BAD are not JSON. Blank lines sprinkled in (ignored, not records). */
function file(): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < N; i++) {
    lines.push(BAD.has(i) ? `{not json ${i}` : JSON.stringify(generatedEvent(i)));
    if (i % 1000 === 999) lines.push('');
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

describe.each(dbKinds())('partitioned batch import on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  const workers: InProcessWorker[] = [];
  const uploads = fs.mkdtempSync(path.join(os.tmpdir(), 'part-uploads-'));

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { UPLOAD_DIR: uploads, SYNC_PARTITION_ROWS: 1000, WORKER_CONCURRENCY: 2 });
    for (let i = 0; i < 2; i++) workers.push(await startInProcessWorker(t.db, app.config, { queueNames: ['batch-import'] }));
  });
  afterAll(async () => {
    for (const w of workers) await w.close();
    for (const q of Object.values(app.queues.queues)) await q.obliterate({ force: true });
    await app.close();
    await t.destroy();
    fs.rmSync(uploads, { recursive: true, force: true });
  });

  async function upload(data: Buffer) {
    const p = await seedProject(t.db);
    const res = await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports?type=events`, {
      method: 'POST',
      headers: { authorization: p.basic, 'content-type': 'application/x-ndjson' },
      body: body(data),
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { results: { id: string } }).results.id;
    await until(async () => {
      const r = await findBatchImport(t.db, id);
      return r && (r.status === 'succeeded' || r.status === 'failed') ? r : undefined;
    }, 60_000);
    const view = (await (await fetch(`${app.url}/api/app/projects/${p.id}/batch-imports/${id}`, { headers: { authorization: p.basic } })).json()) as { results: any };
    return { p, id, view: view.results };
  }

  it('splits an uncompressed NDJSON file into byte ranges, stores each record once, reports rejections at their file position', async () => {
    const { p, id, view } = await upload(file());
    expect(view).toMatchObject({ status: 'succeeded', records_total: N, records_done: N, num_imported: N - BAD.size, num_deduplicated: 0, num_rejected: BAD.size });
    expect(view.rejected_sample.map((r: { index: number }) => r.index)).toEqual([...BAD]);
    const parts = await listPartitions(t.db, 'batch-import', id);
    expect(parts.length).toBeGreaterThanOrEqual(5);
    expect(parts.every((x) => x.status === 'done')).toBe(true);
    expect(view.partitions).toEqual({ total: parts.length, done: parts.length });
    expect(view.workers).toEqual([expect.stringMatching(/^.+:\d+$/)]);
    expect(view.log.join('\n')).toMatch(new RegExp(`split into ${parts.length} byte ranges[\\s\\S]*succeeded: ${N - BAD.size} imported`));
    expect(await countEvents(t.db, p.id)).toBe(N - BAD.size);
    expect(fs.readdirSync(path.join(uploads, String(p.id)))).toEqual([]);
    // The flow's parent names whose it is.
    const parent = await app.queues.queues['batch-import'].getJob(`batch-import-${id}-finish`);
    expect(parent!.name).toBe(`batch-import-finish · project ${p.id} · batch import ${id} (${parts.length} partitions)`);
    // Each partition knows how many records it holds, so its ring measures against that, and
    // reads 100 % once its job completes (not its share of SYNC_PARTITION_ROWS).
    expect(parts.reduce((n, x) => n + ((x.range as { units: number }).units), 0)).toBe(N);
    for (const x of parts) {
      const job = await until(async () => {
        const j = await app.queues.queues['batch-import'].getJob(batchImportPartJobId(id, x.idx));
        return (await j?.getState()) === 'completed' ? j : undefined;
      });
      expect(job.progress).toMatchObject({ progress: 100, percent: 100, partition: x.idx + 1 });
    }
  });

  it('imports a gzipped file whole (one partition)', async () => {
    const { id, view } = await upload(gzip(file()));
    expect(view).toMatchObject({ status: 'succeeded', num_imported: N - BAD.size, partitions: { total: 1, done: 1 } });
    expect(await listPartitions(t.db, 'batch-import', id)).toEqual([]);
  });
});

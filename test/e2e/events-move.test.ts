/**
 * `cli events move` between real stores: SQLite → ClickHouse (one server and the two-shard
 * cluster) and back, counts verified, a second run changes nothing, reports agree afterwards.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExpression } from '../../src/domain/where-expression.js';
import { ClickHouseEventStore } from '../../src/store/clickhouse/clickhouse-event.store.js';
import { createEventStore } from '../../src/store/create-event-store.js';
import { emptyEventRows } from '../../src/store/event-rows.js';
import type { EventStore } from '../../src/store/event-store.js';
import { seedProject } from '../helpers/accounts.js';
import { TEST_SECRETS_KEY } from '../helpers/app.js';
import { clickhouseKinds, createTestClickHouse, type TestClickHouse } from '../helpers/clickhouse.js';
import { createTestDb, type TestDb } from '../helpers/db.js';

const run = promisify(execFile);

async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; json: Record<string, unknown> }> {
  try {
    const { stdout } = await run('node', ['--import', 'tsx', 'src/bin/cli.ts', ...args], { env: { ...process.env, SECRETS_KEY: TEST_SECRETS_KEY, LOG_LEVEL: 'silent', ...env } });
    return { code: 0, json: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, json: e.stdout ? JSON.parse(e.stdout) : { stderr: e.stderr } };
  }
}

function seedRows(n: number) {
  const rows = emptyEventRows();
  for (let i = 0; i < n; i++) {
    rows.event.push(i % 3 ? 'Played' : 'Paused');
    rows.distinctId.push(i % 4 === 0 ? `$device:d${i % 8}` : `user-${i % 5}`);
    rows.time.push(1_760_000_000_000 + i * 60_000);
    rows.insertId.push(`mv-${i}`);
    const props: Record<string, unknown> = { n: i, genre: ['rock', 'jazz', 'pop'][i % 3] };
    if (i % 4 === 0) props.$device_id = `d${i % 8}`;
    if (i === 5) Object.assign(props, { $device_id: 'd0', $user_id: 'user-0' });
    rows.properties.push(JSON.stringify(props));
    rows.deviceId.push(i % 4 === 0 ? `d${i % 8}` : null);
    if (i === 5) rows.links.push({ deviceId: 'd0', userId: 'user-0' });
  }
  return rows;
}

describe.each(clickhouseKinds())('cli events move: SQLite ⇄ %s', (kind) => {
  let sqlite: TestDb;
  let ch: TestClickHouse;
  let source: EventStore;
  let project: number;
  const back = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'move-back-')), 'back.sqlite');

  beforeAll(async () => {
    sqlite = await createTestDb('sqlite');
    ch = await createTestClickHouse(kind);
    source = createEventStore({ EVENT_STORE_URL: undefined }, sqlite.db);
    project = (await seedProject(sqlite.db)).id;
    await source.writeBatch({ projectId: project, source: 'import', rows: seedRows(300), now: Date.now() });
  });
  afterAll(async () => {
    await source?.close();
    await sqlite?.destroy();
    await ch?.destroy();
    fs.rmSync(path.dirname(back), { recursive: true, force: true });
  });

  const clusterArgs = () =>
    kind === 'clickhouse-cluster' ? ['--to-cluster', ch.config.EVENT_STORE_CLUSTER!, '--to-shard-urls', ch.config.EVENT_STORE_SHARD_URLS!] : [];

  it('copies, verifies, and a second run adds nothing', async () => {
    const first = await cli({ DATABASE_URL: sqlite.url }, 'events', 'move', '--project', String(project), '--to', ch.config.EVENT_STORE_URL, ...clusterArgs(), '--json');
    expect(first).toEqual({ code: 0, json: { project_id: project, read: 300, written: 300, source_count: 300, destination_count: 300, verified: true } });
    const again = await cli({ DATABASE_URL: sqlite.url }, 'events', 'move', '--project', String(project), '--to', ch.config.EVENT_STORE_URL, ...clusterArgs(), '--json');
    expect(again.json).toMatchObject({ read: 300, written: 0, verified: true });
  });

  it('answers reports and identities as the source does', async () => {
    const dest = new ClickHouseEventStore(ch.config);
    try {
      const q = { projectId: project, fromMs: 0, toMs: 2e12, unit: 'day' as const, type: 'unique' as const, on: parseExpression('properties["genre"]') };
      const sortCells = (c: { segment: string; bucket: number }[]) => [...c].sort((a, b) => a.segment.localeCompare(b.segment) || a.bucket - b.bucket);
      expect(sortCells(await dest.report(q))).toEqual(sortCells(await source.report(q)));
      expect(await dest.identityOf(project, '$device:d0')).toEqual(await source.identityOf(project, '$device:d0'));
    } finally {
      await dest.close();
    }
  });

  it('moves back from the configured ClickHouse store (EVENT_STORE_URL) into a fresh SQLite store', async () => {
    const env: Record<string, string> = kind === 'clickhouse' ? {} : { EVENT_STORE_CLUSTER: ch.config.EVENT_STORE_CLUSTER!, EVENT_STORE_SHARD_URLS: ch.config.EVENT_STORE_SHARD_URLS! };
    const res = await cli({ DATABASE_URL: sqlite.url, EVENT_STORE_URL: ch.config.EVENT_STORE_URL, ...env }, 'events', 'move', '--project', String(project), '--to', back, '--json');
    expect(res).toEqual({ code: 0, json: { project_id: project, read: 300, written: 300, source_count: 300, destination_count: 300, verified: true } });
  });
});

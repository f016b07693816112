/**
 * The Snowflake bench's measurements, each run by bench/isolated.ts in its own process (peak RSS
 * is that process's): `readOnly` streams the table through the connector in batches and discards the rows;
 * `sync` runs a whole events sync (connector → mapping → the events write path) into a fresh
 * SQLite store with the warehouse-sync handler, as the worker would; `floor` lands the events a
 * `sync` stored once more with the store's floor.
 */
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import { configFrom } from '../config/index.js';
import { createConnector, definitions } from '../connectors/index.js';
import { createProject } from '../src/accounts/accounts.service.js';
import { countEvents } from './bench-store.js';
import { FLOOR_CHUNK, floorOfChunks } from './floors.js';
import type { EventRows } from '../src/store/event-rows.js';
import { runSyncOnce } from './warehouse-sync-cases.js';
import { createDb } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../src/lib/secrets.js';
import { createImport } from '../src/warehouse/imports.service.js';
import { createSource } from '../src/warehouse/sources.service.js';

export interface SnowflakeCaseArgs {
  rows: number;
  /** The source config (stand-in access_url included) and the server config allowing it. */
  sourceConfig: Record<string, unknown>;
  serverConfig: Record<string, string | number>;
  table: string;
  /** sync: the store's SQLite file; floor: the file a sync stored into, whose events it lands again. */
  storePath?: string;
  /** floor: a fresh SQLite file to land them in. */
  floorPath?: string;
}

export interface SnowflakeCaseResult {
  rows: number;
  seconds: number;
  stored?: number;
}

export async function readOnly(args: SnowflakeCaseArgs): Promise<SnowflakeCaseResult> {
  const config = configFrom(args.serverConfig);
  const c = createConnector('snowflake', definitions.snowflake!.configSchema.parse(args.sourceConfig), config);
  await c.test();
  const ctx = { signal: new AbortController().signal, log: silentLogger };
  const started = process.hrtime.bigint();
  let n = 0;
  // In batches, as a sync reads (one await per batch, not per row): the fastest read the connector has.
  for await (const rows of c.streamBatches!({ source: { table: args.table }, orderBy: ['id'] }, ctx, 10_000)) n += rows.length;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await c.close();
  return { rows: n, seconds };
}

export async function sync(args: SnowflakeCaseArgs): Promise<SnowflakeCaseResult> {
  const secretsKey = crypto.randomBytes(32).toString('hex');
  const config = configFrom({ ...args.serverConfig, DATABASE_URL: args.storePath!, SECRETS_KEY: secretsKey, NODE_ENV: 'test', LOG_LEVEL: 'silent' });
  const db = createDb(config);
  await migrateLatest(db);
  const secrets = createSecretBox(secretsKeyFrom(secretsKey));
  const project = await createProject(db, { name: 'bench' });
  const source = await createSource({ db, config, secrets }, project.id, { type: 'snowflake', name: 'bench', config: args.sourceConfig });
  const imp = await createImport({ db, config, secrets }, project.id, {
    warehouse_source_id: source.id,
    import_type: 'events',
    table_params: { table: args.table },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_column_name: 'event',
    time_column_name: 'time',
    user_column_name: 'user_id',
    insert_id_column_name: 'insert_id',
    json_properties_column_name: 'props',
  });
  const seconds = await runSyncOnce({ db, config, secrets }, project.id, imp.id as number);
  const stored = await countEvents(db, project.id);
  await db.destroy();
  return { rows: args.rows, seconds, stored };
}

/** The store's floor (floors.ts) over the very events a `sync` stored in `storePath`, read untimed. */
export async function floor(args: SnowflakeCaseArgs): Promise<SnowflakeCaseResult> {
  const stored = new Database(args.storePath!, { readonly: true });
  function* chunks(): Generator<EventRows> {
    const page = stored.prepare('SELECT rowid, event, distinct_id, time, insert_id, properties, device_id FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?');
    let after = 0;
    for (;;) {
      const rows = page.raw().all(after, FLOOR_CHUNK) as [number, string, string, number, string, string, string | null][];
      if (rows.length === 0) return;
      after = rows[rows.length - 1]![0];
      yield {
        event: rows.map((r) => r[1]),
        distinctId: rows.map((r) => r[2]),
        time: rows.map((r) => Number(r[3])),
        insertId: rows.map((r) => r[4]),
        properties: rows.map((r) => r[5]),
        deviceId: rows.map((r) => r[6]),
        links: [],
      };
    }
  }
  try {
    const result = await floorOfChunks('sqlite', args.floorPath!, chunks, 'warehouse-import');
    return { rows: result.events, seconds: result.seconds, stored: result.stored };
  } finally {
    stored.close();
  }
}

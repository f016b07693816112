/**
 * The warehouse bench's measurements, each run by bench/isolated.ts in its own process (so peak
 * RSS is that process's own):
 * - `floor`: the shared store floor (floors.ts) over events shaped exactly like a sync's output
 *   (same properties, stamps and 32-hex insert ids) — what storing costs alone;
 * - `sync`: a whole events sync run by the warehouse-sync handler as a worker would (describe,
 *   count, read, map, validate, store, checkpoint per batch) from a SQLite or Postgres source;
 * - `mirror`: a mirror run over a table where 1 % of the rows changed since the last run.
 */
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { configFrom, type Config } from '../config/index.js';
import { runWarehouseSync } from '../jobs/warehouse-sync.handler.js';
import type { JobContext } from '../jobs/types.js';
import { createProject } from '../src/accounts/accounts.service.js';
import { benchEventStore, countEvents } from './bench-store.js';
import { storeOutageCheck } from '../src/store/store-outage.js';
import { toEventRows, type EventRows } from '../src/store/event-rows.js';
import { FLOOR_CHUNK, floorOfChunks } from './floors.js';
import { createDb, type Db } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { insertRunIfFree } from '../src/db/sync-runs.repo.js';
import { warehouseInsertId } from '../src/domain/warehouse-mapping.js';
import type { NormalizedEvent } from '../src/domain/event-record.js';
import { silentLogger } from '../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom, type SecretBox } from '../src/lib/secrets.js';
import type { JobQueues } from '../src/queue/queues.js';
import { createImport } from '../src/warehouse/imports.service.js';
import { createSource } from '../src/warehouse/sources.service.js';

export const BASE_MS = Date.UTC(2024, 0, 1);
export const TABLE = 'bench_events';

/** Source row i (the same in both source kinds). */
const SQL_ROW = (i: string) =>
  `${i} AS id, 'event_' || (${i} % 7) AS event, ${BASE_MS} + ${i} * 1000 AS ts, 'user-' || (${i} % 5000) AS user_id, ` +
  `'/p/' || (${i} % 97) AS url, 'plan-' || (${i} % 3) AS plan, ${i} * 0.5 AS amount`;

/** Builds the SQLite source file (one recursive-CTE statement: seconds for a million rows). */
export function buildSqliteSource(file: string, rows: number): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE ${TABLE} (id INTEGER NOT NULL, event TEXT NOT NULL, ts INTEGER NOT NULL, user_id TEXT, url TEXT, plan TEXT, amount REAL)`);
  db.exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows - 1}) INSERT INTO ${TABLE} SELECT ${SQL_ROW('i')} FROM c`);
  db.close();
}

/** Builds the Postgres source table in a fresh schema; returns the schema. */
export async function buildPostgresSource(url: string, rows: number): Promise<string> {
  const schema = `whbench_${crypto.randomBytes(4).toString('hex')}`;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`CREATE SCHEMA ${schema}`);
  await c.query(
    `CREATE TABLE ${schema}.${TABLE} (id bigint NOT NULL, event text NOT NULL, ts bigint NOT NULL, user_id text, url text, plan text, amount double precision)`,
  );
  await c.query(`INSERT INTO ${schema}.${TABLE} SELECT ${SQL_ROW('i')} FROM generate_series(0, ${rows - 1}) AS i`);
  await c.query(`ANALYZE ${schema}.${TABLE}`);
  await c.end();
  return schema;
}

export async function dropPostgresSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
}

export interface SyncCaseArgs {
  rows: number;
  /** The store: a SQLite file path, or a postgres URL with a fresh schema (`storeSchema`). */
  store: string;
  storeSchema?: string;
  source:
    | { type: 'sqlite'; path: string }
    | { type: 'postgres' | 'redshift'; url: string; schema: string }
    /** `url` names the database holding the table. */
    | { type: 'mysql'; url: string }
    /** A source given by its API config and the table name its imports use (the cloud stand-ins). */
    | { type: 'bigquery' | 'databricks'; config: Record<string, unknown>; table: string };
}

export interface SyncCaseResult {
  rows: number;
  seconds: number;
  stored: number;
}

/** The bench's store: a SQLite file, or a fresh schema in the Postgres at `store`. */
export async function storeDb(args: Pick<SyncCaseArgs, 'store' | 'storeSchema'>): Promise<Db> {
  if (!args.storeSchema) return createDb({ DATABASE_URL: args.store });
  const admin = createDb({ DATABASE_URL: args.store }, { poolMax: 1 });
  await admin.raw(`CREATE SCHEMA IF NOT EXISTS ${args.storeSchema}`);
  await admin.destroy();
  return createDb({ DATABASE_URL: args.store }, { schema: args.storeSchema });
}

const STAMP = (importId: string, runId: string) => ({
  $warehouse_import_id: importId,
  $warehouse_import_job_id: `warehouse-sync-${runId}`,
  $warehouse_import_run_id: runId,
  $import: true,
  $source: 'warehouse-import',
  $warehouse_type: 'sqlite',
  $warehouse_table: TABLE,
});

/** The shared store floor (floors.ts) over the rows this sync stores, built untimed. */
export async function floor(args: SyncCaseArgs): Promise<SyncCaseResult> {
  const stamp = STAMP('1', crypto.randomUUID());
  function* chunks(): Generator<EventRows> {
    for (let b = 0; b < args.rows; b += FLOOR_CHUNK) {
      const events: NormalizedEvent[] = [];
      for (let i = b; i < Math.min(args.rows, b + FLOOR_CHUNK); i++) {
        const event = `event_${i % 7}`;
        const user = `user-${i % 5000}`;
        const time = BASE_MS + i * 1000;
        events.push({
          event,
          distinctId: user,
          time,
          insertId: warehouseInsertId(event, user, time, undefined),
          properties: { id: i, url: `/p/${i % 97}`, plan: `plan-${i % 3}`, amount: i * 0.5, $user_id: user, ...stamp },
        });
      }
      yield toEventRows(events);
    }
  }
  const result = await floorOfChunks(args.storeSchema ? 'postgres' : 'sqlite', args.store, chunks, 'warehouse-import');
  return { rows: result.events, seconds: result.seconds, stored: result.stored };
}

/** A project, a source and an import of `args` in a fresh store; `run()` runs one sync of it as a worker would. */
async function syncHarness(args: SyncCaseArgs, mode: Record<string, unknown>) {
  const secretsKey = crypto.randomBytes(32).toString('hex');
  // The bench's sources are on loopback and in a scratch directory: the operator's opt-in.
  const config = configFrom({ DATABASE_URL: args.store, SECRETS_KEY: secretsKey, NODE_ENV: 'test', LOG_LEVEL: 'silent', SYNC_PARTITION_ROWS: '1000000000', WAREHOUSE_ALLOWED_HOSTS: '127.0.0.1,localhost', WAREHOUSE_SQLITE_ALLOWED_DIRS: '/' });
  const db = await storeDb(args);
  await migrateLatest(db);
  const secrets = createSecretBox(secretsKeyFrom(secretsKey));
  const deps = { db, config, secrets };
  const project = await createProject(db, { name: 'bench' });
  const src = args.source;
  const source = await createSource(deps, project.id, {
    type: src.type,
    name: 'bench',
    config: 'config' in src ? src.config : src.type === 'sqlite' ? { path: src.path } : { connection_string: src.url },
  });
  const table = 'table' in src ? src.table : src.type === 'sqlite' || src.type === 'mysql' ? TABLE : `${src.schema}.${TABLE}`;
  const imp = await createImport(deps, project.id, {
    warehouse_source_id: source.id,
    import_type: 'events',
    table_params: { table },
    schedule: 'api_only',
    event_column_name: 'event',
    time_column_name: 'ts',
    user_column_name: 'user_id',
    ...mode,
  });
  return { db, project, run: () => runSyncOnce({ db, config, secrets }, project.id, imp.id as number) };
}

/** One manual run of an import, by the warehouse-sync handler as a worker runs it; its seconds. */
export async function runSyncOnce(deps: { db: Db; config: Config; secrets: SecretBox }, projectId: number, importId: number): Promise<number> {
  const { db, config, secrets } = deps;
  const runId = crypto.randomUUID();
  await insertRunIfFree(db, { id: runId, importId, projectId, trigger: 'manual', jobId: `warehouse-sync-${runId}`, log: [], now: Date.now() });
  const events = benchEventStore(db);
  const ctx: JobContext = {
    db,
    events,
    storeOutage: storeOutageCheck(db, events),
    log: silentLogger,
    config,
    secrets,
    queues: undefined as unknown as JobQueues, // the handler never enqueues
    signal: new AbortController().signal,
    progress: async () => {},
    logLine: async () => {},
    attempt: 1,
    jobId: `warehouse-sync-${runId}`,
  };
  const started = process.hrtime.bigint();
  const outcome = await runWarehouseSync(runId, ctx);
  if (outcome !== 'succeeded') throw new Error(`sync ended ${outcome}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export async function sync(args: SyncCaseArgs): Promise<SyncCaseResult> {
  const h = await syncHarness(args, { sync_mode: 'full_sync' });
  const seconds = await h.run();
  const stored = await countEvents(h.db, h.project.id);
  await h.db.destroy();
  return { rows: args.rows, seconds, stored };
}

/**
 * A mirror of a SQLite source table (its own copy: this changes it): the first run loads it,
 * then 1 % of the rows change in the warehouse (0.5 % updated, 0.25 % deleted, 0.25 % added) and
 * the second run — the one measured — follows them. `seconds` is the second run's.
 */
export async function mirror(args: SyncCaseArgs): Promise<SyncCaseResult & { initialSeconds: number; changed: number[] }> {
  if (args.source.type !== 'sqlite') throw new Error('mirror bench: SQLite source only');
  const h = await syncHarness(args, { sync_mode: 'mirror', insert_id_column_name: 'id' });
  const initialSeconds = await h.run();
  const src = new Database(args.source.path);
  src.exec(`UPDATE ${TABLE} SET url = 'changed' WHERE id % 200 = 0`);
  src.exec(`DELETE FROM ${TABLE} WHERE id % 400 = 1`);
  src.exec(`INSERT INTO ${TABLE} SELECT id + ${args.rows}, event, ts, user_id, url, plan, amount FROM ${TABLE} WHERE id % 400 = 2`);
  src.close();
  const seconds = await h.run();
  const last = await h.db('sync_runs').orderBy('created_at', 'desc').first();
  const stored = await countEvents(h.db, h.project.id);
  await h.db.destroy();
  return { rows: args.rows, seconds, stored, initialSeconds, changed: [Number(last.num_imported), Number(last.num_updated), Number(last.num_deleted)] };
}

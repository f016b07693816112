/**
 * Snowflake-specific edges of the warehouse connector, over the app API with the real
 * snowflake-sdk against the stand-in, on both stores: a login the stand-in refuses is a 400 at
 * source creation (nothing stored, nothing echoed), an access_url the operator did not allow is a
 * 400, a query that fails in Snowflake is a FAILED run with Snowflake's message in the history,
 * and a sync that crashes mid-way re-reads from the first row (never an OFFSET past the rows
 * committed: the table may have changed) without losing or doubling events or counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents } from '../helpers/events.js';
import { runWarehouseSync } from '../../jobs/warehouse-sync.handler.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { call, createSourceAndImport, history, jobContext, manualSync, type Api } from '../helpers/warehouse.js';
import { createSnowflakeFixture, STANDIN_PASSWORD, type SnowflakeFixture } from '../snowflake-standin/standin-fixture.js';

const T0 = Date.UTC(2024, 5, 1, 0, 0, 0);
const ROWS = 1000;

describe.each(dbKinds())('snowflake source on %s', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let fx: SnowflakeFixture;
  let p: SeededProject;
  let api: Api;

  beforeAll(async () => {
    t = await createTestDb(kind);
    fx = await createSnowflakeFixture({ inlineRows: 100, chunkRows: 250 });
    app = await startTestApp(t.db, { ...fx.serverConfig, WAREHOUSE_BATCH_SIZE: 100 });
    p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
    fx.db.exec(`CREATE TABLE events ("id" NUMBER(38,0) NOT NULL, "name" VARCHAR NOT NULL, "ts" TIMESTAMP_NTZ NOT NULL, "user_id" VARCHAR, "props" VARIANT)`);
    const ins = fx.db.prepare('INSERT INTO events VALUES (?,?,?,?,?)');
    fx.db.transaction(() => {
      for (let i = 0; i < ROWS; i++) ins.run(i, `e${i % 3}`, new Date(T0 + i * 1000).toISOString(), `u${i % 17}`, JSON.stringify({ n: i }));
    })();
  });
  afterAll(async () => {
    await app?.queues.queues['warehouse-sync'].obliterate({ force: true });
    await app?.close();
    await fx?.close();
    await t?.destroy();
  });

  const eventsImport = (table: string) => ({
    import_type: 'events',
    table_params: { table },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_column_name: 'name',
    time_column_name: 'ts',
    user_column_name: 'user_id',
    insert_id_column_name: 'id',
    json_properties_column_name: 'props',
  });

  it('a login the stand-in refuses is a 400 that says why, without echoing the credential or storing the source', async () => {
    const wrong = await call(api, 'POST', '', { type: 'snowflake', name: 'bad', config: fx.sourceConfig({ password: 'wrong-password-123' }) });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/connection test failed: Snowflake refused the login .*Incorrect username or password was specified/);
    expect(JSON.stringify(wrong.body)).not.toContain('wrong-password-123');
    const role = await call(api, 'POST', '', { type: 'snowflake', name: 'bad', config: fx.sourceConfig({ role: 'SYSADMIN' }) });
    expect(role.status).toBe(400);
    expect(role.body.error).toMatch(/Role 'SYSADMIN' specified in the connect string is not granted/);
    const listed = await call(api, 'GET', '');
    expect(listed.body.results).toEqual([]);
  });

  it('an access_url the operator did not allow, a bad key or a missing credential is a 400 before any login', async () => {
    const before = (await fx.stats()).logins + (await fx.stats()).failedLogins.length;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ access_url: 'http://169.254.169.254' }, /access_url is not allowed on this server/],
      [{ password: undefined }, /password or private_key/],
      [{ password: undefined, private_key: 'not a key' }, /private_key must be a PEM private key/],
      [{ pasword: STANDIN_PASSWORD }, /unknown field 'pasword'/],
    ];
    for (const [overrides, message] of cases) {
      const res = await call(api, 'POST', '', { type: 'snowflake', config: fx.sourceConfig(overrides) });
      expect(res.status, JSON.stringify(overrides)).toBe(400);
      expect(res.body.error).toMatch(message);
    }
    expect((await fx.stats()).logins + (await fx.stats()).failedLogins.length).toBe(before);
  });

  it('validates imports against the Snowflake schema: nullable time with full_sync, unknown columns, missing table', async () => {
    fx.db.exec(`CREATE TABLE loose ("name" VARCHAR, "ts" TIMESTAMP_NTZ, "user_id" VARCHAR)`);
    const created = await call(api, 'POST', '', { type: 'snowflake', name: 'sf', config: fx.sourceConfig() });
    expect(created.status).toBe(200);
    const body = (extra: Record<string, unknown>) => ({ warehouse_source_id: created.body.results.id, ...eventsImport('loose'), insert_id_column_name: undefined, json_properties_column_name: undefined, ...extra });
    const nullable = await call(api, 'POST', '/imports', body({}));
    expect(nullable.status).toBe(400);
    expect(nullable.body.error).toMatch(/column 'ts' is nullable in the source; full_sync needs a NOT NULL/);
    const unknown = await call(api, 'POST', '/imports', body({ sync_mode: 'time_based', insert_time_column_name: 'TS' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/insert_time_column_name: column 'TS' does not exist in the source \(columns: name, ts, user_id\)/);
    const missing = await call(api, 'POST', '/imports', body({ table_params: { table: 'ANALYTICS.PUBLIC.nowhere' } }));
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/Object 'NOWHERE' does not exist or not authorized/);
    const ok = await call(api, 'POST', '/imports', body({ sync_mode: 'time_based', insert_time_column_name: 'ts' }));
    expect(ok.status).toBe(200);
  });

  it('a query that fails in Snowflake is a FAILED run with Snowflake’s message in the history', async () => {
    fx.db.exec(`CREATE TABLE doomed ("id" NUMBER(38,0) NOT NULL, "name" VARCHAR NOT NULL, "ts" TIMESTAMP_NTZ NOT NULL, "user_id" VARCHAR, "props" VARIANT)`);
    const { importId } = await createSourceAndImport(api, { type: 'snowflake', name: 'sf', config: fx.sourceConfig() }, eventsImport('ANALYTICS.PUBLIC.doomed'));
    fx.db.exec('DROP TABLE doomed'); // dropped in the warehouse after the import was set up
    const { run_id, job_id } = await manualSync(api, importId);
    await expect(runWarehouseSync(run_id, jobContext(t.db, app.config, app.queues, { jobId: job_id }))).rejects.toThrow(/does not exist/);
    const [run] = await history(api, importId);
    expect(run).toMatchObject({ run_id, status: 'FAILED', num_events_imported: 0 });
    expect(run.error).toMatch(/Snowflake query failed: SQL compilation error:\nObject 'DOOMED' does not exist or not authorized\. \(code 002003, SQL state 42S02/);
    expect(run.log.join('\n')).toMatch(/failed: Snowflake query failed: .*Object 'DOOMED' does not exist/s);
  });

  it('a sync that crashes mid-way re-reads from the first row: every event once, counted once', async () => {
    const q = await seedProject(t.db);
    const qa: Api = { ...api, basic: q.basic, projectId: q.id };
    const { importId } = await createSourceAndImport(qa, { type: 'snowflake', name: 'sf', config: fx.sourceConfig() }, eventsImport('events'));
    const { run_id, job_id } = await manualSync(qa, importId);

    // Attempt 1 dies after its third batch committed (as if the process lost its database).
    const first = jobContext(t.db, app.config, app.queues, { jobId: job_id });
    let batches = 0;
    first.progress = async () => {
      if (++batches === 3) throw new Error('simulated crash after a committed batch');
    };
    await expect(runWarehouseSync(run_id, first)).rejects.toThrow(/simulated crash/);
    const [crashed] = await history(qa, importId);
    expect(crashed).toMatchObject({ status: 'QUEUED', rows_read: 300, num_events_imported: 300 });
    expect(await countEvents(t.db, q.id)).toBe(300);

    // Attempt 2 (BullMQ's retry) reads again from the first row; the 300 events stored are not counted as duplicates.
    const outcome = await runWarehouseSync(run_id, jobContext(t.db, app.config, app.queues, { jobId: job_id, attempt: 2 }));
    expect(outcome).toBe('succeeded');
    const [done] = await history(qa, importId);
    expect(done).toMatchObject({ status: 'SUCCEEDED', rows_read: ROWS, num_events_imported: ROWS, num_deduplicated: 0, rows_skipped: 0 });
    expect(done.log.join('\n')).toMatch(/attempt 2 \(job [^)]*\): re-reading from the first row/);
    expect(await countEvents(t.db, q.id)).toBe(ROWS);
    const sent = (await fx.stats()).queries.map((x) => x.sqlText);
    const reads = sent.filter((s) => s.startsWith('SELECT "id", "name", "ts", "user_id", "props" FROM events ORDER BY'));
    expect(reads.length).toBe(2);
    expect(reads.some((s) => /OFFSET [1-9]/.test(s))).toBe(false);
  });
});

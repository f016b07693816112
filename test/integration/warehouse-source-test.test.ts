/**
 * `POST …/warehouse-sources/{id}/test` on every source type: all good → 200 with the checks; a
 * problem that would fail the next sync → 400 naming it in a data engineer's words (host not
 * allowed, wrong password, missing grant, no such table or column, a time column that became
 * nullable under full_sync) — never a stack trace or a credential.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { bigquerySourceFixture, databricksSourceFixture } from '../helpers/cloud-sources.js';
import { mysqlSourceFixture, postgresSourceFixture, redshiftSourceFixture, sqliteSourceFixture, type WarehouseSourceHandle } from '../helpers/warehouse-sources.js';
import { call, createSourceAndImport, type Api } from '../helpers/warehouse.js';

const fixtures = [sqliteSourceFixture, postgresSourceFixture, redshiftSourceFixture, mysqlSourceFixture, bigquerySourceFixture, databricksSourceFixture].filter((f) => f.available());

describe.each(fixtures.map((f) => [f.type, f] as const))('POST …/warehouse-sources/{id}/test on a %s source', (type, fixture) => {
  let t: TestDb;
  let app: TestApp;
  let strict: TestApp;
  let src: WarehouseSourceHandle;
  let p: SeededProject;
  let api: Api;

  beforeAll(async () => {
    t = await createTestDb('sqlite');
    app = await startTestApp(t.db);
    // The same service with the production reach defaults: its sources may not reach loopback.
    strict = await startTestApp(t.db, { WAREHOUSE_ALLOWED_HOSTS: '', WAREHOUSE_SQLITE_ALLOWED_DIRS: '' });
    src = await fixture.create();
    for (const name of ['ev', 'other']) {
      await src.createTable({
        name,
        columns: [
          { name: 'name', type: 'text', notNull: true },
          { name: 'ts', type: 'timestamp', notNull: true },
          { name: 'who', type: 'text' },
        ],
      });
      await src.insertRows(name, [{ name: 'a', ts: new Date(Date.UTC(2024, 0, 1)), who: 'u' }]);
    }
    p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
  });
  afterAll(async () => {
    await strict?.close();
    await app?.close();
    await src?.cleanup();
    await t?.destroy();
  });

  const imp = (table: string) => ({
    import_type: 'events',
    table_params: { table: src.tableRef(table) },
    sync_mode: 'full_sync',
    schedule: 'api_only',
    event_column_name: 'name',
    time_column_name: 'ts',
    user_column_name: 'who',
  });
  const test = async (sourceId: number, on: TestApp = app) => {
    const res = await call({ ...api, url: on.url }, 'POST', `/${sourceId}/test`);
    const text = JSON.stringify(res.body);
    expect(text).not.toMatch(/\bat \S+\.(ts|js):\d+|node_modules/);
    const secret = new URL(String(src.sourceBody().config.connection_string ?? 'x://h')).password;
    if (secret) expect(text).not.toContain(secret);
    return res;
  };

  it('answers 200 with every check passed, and names each problem with a 400', async () => {
    const { sourceId, importId } = await createSourceAndImport(api, src.sourceBody(), imp('ev'));
    const good = await test(sourceId);
    expect(good.status).toBe(200);
    expect(good.body.results).toEqual({ ok: true, checks: [{ check: 'connection', ok: true }, { check: `import ${importId} (table ${src.tableRef('ev')})`, ok: true }] });

    // The reach rules apply at /test too (a server whose operator allows no loopback).
    const refused = await test(sourceId, strict);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ status: 'error', error: expect.stringMatching(/^connection: (host not allowed|config\.path must be inside one of the allowed directories)/) });

    // A column the import maps is dropped, another import's table is dropped.
    const second = await createSourceAndImport(api, src.sourceBody('second'), imp('other'));
    await src.exec(`ALTER TABLE ${src.tableRef('ev')} DROP COLUMN ${type === 'mysql' ? '`who`' : '"who"'}`);
    await src.exec(`DROP TABLE ${src.tableRef('other')}`);
    const broken = await test(sourceId);
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatch(new RegExp(`import ${importId} \\(table [^)]+\\): user_column_name: column 'who' does not exist`));
    const gone = await test(second.sourceId);
    expect(gone.body.error).toMatch(new RegExp(`import ${second.importId} \\(table [^)]+\\): .*table not found`));
    expect(gone.body.checks).toEqual([
      { check: 'connection', ok: true },
      { check: `import ${second.importId} (table ${src.tableRef('other')})`, ok: false, problem: expect.stringMatching(/table not found/) },
    ]);
  });

  // SQLite cannot drop a column's NOT NULL in place (no ALTER COLUMN), so the case exists only on servers.
  it.runIf(type !== 'sqlite')('a time column made nullable under full_sync is named', async () => {
    await src.createTable({ name: 'loose', columns: [{ name: 'name', type: 'text', notNull: true }, { name: 'ts', type: 'timestamp', notNull: true }, { name: 'who', type: 'text' }] });
    const { sourceId } = await createSourceAndImport(api, src.sourceBody('loose'), imp('loose'));
    await src.exec(type === 'mysql' ? 'ALTER TABLE `loose` MODIFY `ts` DATETIME(6) NULL' : `ALTER TABLE ${src.tableRef('loose')} ALTER COLUMN "ts" DROP NOT NULL`);
    const res = await test(sourceId);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/time_column_name: column 'ts' is nullable in the source; full_sync needs a NOT NULL event time column/);
  });

  // PostgreSQL's catalog lists a table's columns to a user without SELECT on it: the import is
  // refused when it is created, as a query or a MariaDB table is, not at its first sync.
  it.runIf(type === 'postgres')('an import of a table its user may not SELECT is a 400 naming the grant', async () => {
    await src.createTable({ name: 'hidden', columns: [{ name: 'name', type: 'text', notNull: true }, { name: 'ts', type: 'timestamp', notNull: true }, { name: 'who', type: 'text' }] });
    const role = `wh_ro_${crypto.randomBytes(4).toString('hex')}`;
    const schema = src.tableRef('hidden').split('.')[0]!;
    await src.exec(`CREATE ROLE ${role} LOGIN PASSWORD 'ro-pass'`);
    await src.exec(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    try {
      const url = new URL(src.sourceBody().config.connection_string as string);
      url.username = role;
      url.password = 'ro-pass';
      const source = await call(api, 'POST', '', { type: 'postgres', name: 'reader', config: { connection_string: url.toString() } });
      expect(source.status, JSON.stringify(source.body)).toBe(200);
      const res = await call(api, 'POST', '/imports', { warehouse_source_id: source.body.results.id, ...imp('hidden') });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/missing grant: permission denied .*GRANT SELECT on the table/);
    } finally {
      await src.exec(`DROP OWNED BY ${role}`);
      await src.exec(`DROP ROLE ${role}`);
    }
  });

  // Only MariaDB here has per-table grants the test can revoke from a real user; wrong credentials
  // for every type are covered by the connector suite's bad-login case.
  it.runIf(type === 'mysql')('a missing grant and a changed password are named as such', async () => {
    await src.createTable({ name: 'granted', columns: [{ name: 'name', type: 'text', notNull: true }, { name: 'ts', type: 'timestamp', notNull: true }, { name: 'who', type: 'text' }] });
    await src.createTable({ name: 'private', columns: [{ name: 'name', type: 'text', notNull: true }, { name: 'ts', type: 'timestamp', notNull: true }, { name: 'who', type: 'text' }] });
    const { sourceId, importId } = await createSourceAndImport(api, src.sourceBody('grants'), imp('private'));
    const url = new URL(src.sourceBody().config.connection_string as string);
    const [db, user] = [url.pathname.slice(1), url.username];
    for (const host of ['%', 'localhost']) {
      await src.exec(`REVOKE SELECT ON \`${db}\`.* FROM '${user}'@'${host}'`);
      await src.exec(`GRANT SELECT ON \`${db}\`.\`granted\` TO '${user}'@'${host}'`);
    }
    const denied = await test(sourceId);
    expect(denied.status).toBe(400);
    expect(denied.body.error).toMatch(new RegExp(`import ${importId} \\(table private\\): missing grant: SELECT command denied .*GRANT SELECT`));

    for (const host of ['%', 'localhost']) await src.exec(`ALTER USER '${user}'@'${host}' IDENTIFIED BY 'rotated-elsewhere'`);
    const wrong = await test(sourceId);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/^connection: wrong user name or password: Access denied for user/);
  });
});

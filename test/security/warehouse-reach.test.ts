/**
 * Hostile tenant vs the reach rules (issue 18 findings 1 and 2), on the DEFAULT configuration
 * (no WAREHOUSE_ALLOWED_HOSTS, default WAREHOUSE_SQLITE_ALLOWED_DIRS): a source aimed at loopback,
 * link-local, a Unix socket or the service's own database/Redis, a connection option that reads a
 * local file, a SQLite file outside the allowed directories (also through a symlink or `..`) —
 * each is a 400 that says why, and nothing is stored. Connect-time enforcement: a connector built
 * from a stored config refuses the same targets, for every source type.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector, definitions, type SourceType } from '../../connectors/index.js';
import { seedProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';
import { availableWarehouseSources } from '../helpers/warehouse-sources.js';
import { call, type Api } from '../helpers/warehouse.js';

/** The production defaults: what a server gets when the operator sets nothing. */
const DEFAULT_REACH = { WAREHOUSE_ALLOWED_HOSTS: '', WAREHOUSE_SQLITE_ALLOWED_DIRS: '' };

/** A service-account key whose token_uri (where the service posts the signed JWT) is `tokenUri`. */
const keyFor = (tokenUri: string) => ({
  type: 'service_account',
  client_email: 'x@p.iam.gserviceaccount.com',
  private_key: crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }),
  token_uri: tokenUri,
});
const bq = { project_id: 'proj-123456', dataset: 'analytics' };

/** [type, config, expected message] for network sources aimed where they must not go. */
export const hostileNetworkSources: [string, Record<string, unknown>, RegExp][] = [
  ['postgres', { connection_string: 'postgres://postgres@127.0.0.1:5432/test' }, /host not allowed: 127\.0\.0\.1:5432 is this service's own (database|Redis)/],
  ['postgres', { connection_string: 'postgres://postgres@localhost:5432/test' }, /host not allowed: localhost:5432/],
  ['postgres', { connection_string: 'postgres://postgres@[::1]:5432/test' }, /host not allowed: ::1:5432/],
  ['postgres', { connection_string: 'postgres://postgres@0.0.0.0:5432/test' }, /host not allowed: 0\.0\.0\.0:5432 is a loopback or link-local address/],
  ['postgres', { connection_string: 'postgres://postgres@169.254.169.254/meta' }, /host not allowed: 169\.254\.169\.254:5432 is a loopback or link-local address/],
  ['postgres', { connection_string: 'postgres://postgres@%2Fvar%2Frun%2Fpostgresql/test' }, /host not allowed: .* is a Unix socket/],
  ['postgres', { connection_string: 'postgres://postgres@db.example.com/test?host=/var/run/postgresql' }, /host not allowed: .* is a Unix socket/],
  ['postgres', { connection_string: 'postgres://postgres@203.0.113.7/test?sslmode=require&sslrootcert=/dev/zero' }, /sslrootcert is refused \(it makes the server read a local file\)/],
  ['postgres', { connection_string: 'postgres://postgres@203.0.113.7/test?sslkey=/etc/ssl/private/key.pem' }, /sslkey is refused/],
  ['postgres', { connection_string: 'postgres://postgres@203.0.113.7/test?passfile=/root/.pgpass' }, /passfile is refused/],
  ['postgres', { connection_string: 'postgres://postgres@203.0.113.7/test?service=prod' }, /service is refused/],
  ['redshift', { connection_string: 'postgres://awsuser@127.0.0.1/dev' }, /host not allowed: 127\.0\.0\.1:5439 is this service's own (database|Redis)/],
  ['redshift', { connection_string: 'postgres://awsuser@169.254.169.254:5439/dev' }, /host not allowed: .*loopback or link-local/],
  ['redshift', { connection_string: 'postgres://awsuser@cluster.example.com:5439/dev?sslcert=/etc/ssl/cert.pem' }, /sslcert is refused/],
  ['mysql', { connection_string: 'mysql://root@127.0.0.1:3306/mysql' }, /host not allowed: 127\.0\.0\.1:3306 is this service's own (database|Redis)/],
  ['mysql', { connection_string: 'mysql://root@localhost/mysql' }, /host not allowed: localhost:3306/],
  ['mysql', { connection_string: 'mysql://root@[::ffff:127.0.0.1]:3306/mysql' }, /host not allowed/],
  ['mysql', { connection_string: 'mysql://root@203.0.113.7/db?socketPath=/var/run/mysqld/mysqld.sock' }, /socketPath is refused/],
  ['mysql', { connection_string: 'mysql://root@203.0.113.7/db?localInfile=true' }, /localInfile is refused/],
  ['mysql', { connection_string: 'mysql://root@203.0.113.7/db?flags=LOCAL_FILES' }, /flags is refused/],
  ['mysql', { connection_string: 'mysql://root@203.0.113.7/db?sslca=/etc/ssl/certs/ca.pem' }, /sslca is refused/],
  // Not hostile, just wrong: a host that does not resolve is named as such (never retried for ever).
  ['postgres', { connection_string: 'postgres://u@no-such-host.invalid/db' }, /unknown host: no-such-host\.invalid does not resolve/],
  ['redshift', { connection_string: 'postgres://u@no-such-cluster.invalid:5439/dev' }, /unknown host: no-such-cluster\.invalid does not resolve/],
  ['mysql', { connection_string: 'mysql://u:p@no-such-host.invalid/db' }, /unknown host: no-such-host\.invalid does not resolve/],
  ['snowflake', { account: 'acct', username: 'u', password: 'p', access_url: 'http://127.0.0.1:5432' }, /SNOWFLAKE_ALLOWED_ACCESS_URLS/],
  ['bigquery', { ...bq, credentials_json: keyFor('https://oauth2.googleapis.com/token'), api_endpoint: 'http://127.0.0.1:6379' }, /host not allowed: 127\.0\.0\.1:6379/],
  ['bigquery', { ...bq, credentials_json: keyFor('http://169.254.169.254/computeMetadata/v1/token'), api_endpoint: 'http://203.0.113.7' }, /host not allowed: 169\.254\.169\.254:80/],
  ['bigquery', { ...bq, credentials_json: keyFor('http://[::1]:8080/token'), api_endpoint: 'http://203.0.113.7' }, /host not allowed: ::1:8080/],
  ['databricks', { host: 'localhost:5432', http_path: '/sql/1.0/warehouses/abc', token: 't' }, /host not allowed: localhost:5432/],
  ['databricks', { host: 'dbc-1.cloud.databricks.com', http_path: '/sql/1.0/warehouses/abc', token: 't', api_endpoint: 'http://169.254.169.254' }, /host not allowed: 169\.254\.169\.254:80/],
];

/** An address of one of this machine's network interfaces other than loopback. */
const machineAddress = Object.values(os.networkInterfaces())
  .flatMap((list) => list ?? [])
  .find((i) => !i.internal && i.family === 'IPv4')?.address;

describe.each(dbKinds())('hostile tenant: warehouse source reach on the default rules (%s store)', (kind) => {
  let t: TestDb;
  let app: TestApp;
  let api: Api;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reach-'));
  const allowedDir = path.resolve('data/warehouses');
  const link = path.join(allowedDir, `link-${process.pid}-${kind}.sqlite`);

  beforeAll(async () => {
    t = await createTestDb(kind);
    app = await startTestApp(t.db, { ...DEFAULT_REACH, DATABASE_URL: t.url });
    const p = await seedProject(t.db);
    api = { url: app.url, basic: p.basic, projectId: p.id };
    fs.mkdirSync(allowedDir, { recursive: true });
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(link, { force: true });
  });

  const expectRefused = async (type: string, config: Record<string, unknown>, message: RegExp) => {
    const res = await call(api, 'POST', '', { type, name: 'hostile', config });
    expect(res.status, `${type} ${JSON.stringify(config)}: ${JSON.stringify(res.body)}`).toBe(400);
    expect(res.body.status).toBe('error');
    expect(res.body.error).toMatch(message);
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts:\d+|stack/);
  };

  it('network sources aimed at loopback, link-local, a Unix socket or the service itself, or reading local files: 400, nothing stored', async () => {
    for (const [type, config, message] of hostileNetworkSources) {
      if (definitions[type as SourceType]) await expectRefused(type, config, message);
    }
    expect(Number((await t.db('warehouse_sources').count({ n: '*' }).first())!.n)).toBe(0);
  });

  // Conditional: needs a network interface besides loopback (every CI machine has one; a machine with loopback alone has no such address to aim at).
  it.runIf(machineAddress)('network sources aimed at this machine through one of its own interface addresses: 400, as loopback', async () => {
    const host = machineAddress!.includes(':') ? `[${machineAddress}]` : machineAddress!;
    const refused = new RegExp(`host not allowed: .*is this service's own machine`);
    await expectRefused('postgres', { connection_string: `postgres://postgres@${host}:5432/test` }, refused);
    await expectRefused('mysql', { connection_string: `mysql://root@${host}:3306/mysql` }, refused);
    if (definitions.databricks) {
      await expectRefused('databricks', { host: 'dbc-1.cloud.databricks.com', http_path: '/sql/1.0/warehouses/abc', token: 't', api_endpoint: `http://${host}:8080` }, refused);
    }
    expect(Number((await t.db('warehouse_sources').count({ n: '*' }).first())!.n)).toBe(0);
  });

  it('SQLite files only under the allowed directories, after resolving symlinks and ..', async () => {
    const outside = path.join(tmp, 'outside.sqlite');
    fs.writeFileSync(outside, '');
    fs.symlinkSync(outside, link);
    await expectRefused('sqlite', { path: outside }, /must be inside one of the allowed directories/);
    await expectRefused('sqlite', { path: link }, /must be inside one of the allowed directories/);
    await expectRefused('sqlite', { path: path.join(allowedDir, '..', '..', '..', path.relative('/', outside)) }, /allowed directories/);
    if (kind === 'sqlite') await expectRefused('sqlite', { path: path.resolve(t.url) }, /this service's own database/);
  });

  it('a stored source is checked again at connect time: every source type refuses its fixture on the default rules', async () => {
    const settings = configFrom(DEFAULT_REACH);
    for (const fixture of availableWarehouseSources()) {
      const src = await fixture.create();
      try {
        const body = src.sourceBody();
        const connector = createConnector(body.type, definitions[body.type as SourceType]!.configSchema.parse(body.config), settings);
        await expect(connector.test(), body.type).rejects.toThrow(/host not allowed|allowed directories|SNOWFLAKE_ALLOWED_ACCESS_URLS/);
        await connector.close();
      } finally {
        await src.cleanup();
      }
    }
  });
});

/**
 * The Snowflake source through the real snowflake-sdk against the local protocol stand-in
 * (test/snowflake-standin): logins, errors, schema, typed values, pushed-down dedupe, watermark,
 * resume, cancellation, and the access_url allowlist.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector, definitions } from '../../connectors/index.js';
import { WarehouseError, WarehouseReadAborted, type ConnectorContext, type ReadSpec, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';
import { createSnowflakeFixture, STANDIN_KEY_PASSPHRASE, STANDIN_KEY_USER, STANDIN_PASSWORD, type SnowflakeFixture } from '../snowflake-standin/standin-fixture.js';

let fx: SnowflakeFixture;
const open: WarehouseConnector[] = [];

function connector(overrides: Record<string, unknown> = {}, serverConfig?: Record<string, string | number>): WarehouseConnector {
  const c = createConnector('snowflake', definitions.snowflake!.configSchema.parse(fx.sourceConfig(overrides)), configFrom(serverConfig ?? fx.serverConfig));
  open.push(c);
  return c;
}

function ctx(signal = new AbortController().signal): ConnectorContext & { lines: string[] } {
  const lines: string[] = [];
  return { lines, signal, log: { info: (o, m) => lines.push(`${m} ${JSON.stringify(o)}`), warn: (o, m) => lines.push(`${m} ${JSON.stringify(o)}`) } };
}

async function readAll(c: WarehouseConnector, spec: ReadSpec, context = ctx()): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of c.stream(spec, context)) rows.push(r);
  return rows;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

const T0 = Date.UTC(2024, 2, 1, 12, 0, 0, 0);

beforeAll(async () => {
  fx = await createSnowflakeFixture({ inlineRows: 50, chunkRows: 200, inProgressAfterMs: 200 });
  fx.db.exec(`
    CREATE TABLE events ("event" VARCHAR NOT NULL, "time" TIMESTAMP_NTZ(9) NOT NULL, "user_id" VARCHAR, "insert_id" VARCHAR,
      "big" NUMBER(38,0), "amount" NUMBER(10,2), "ratio" FLOAT, "props" VARIANT, "flag" BOOLEAN, "day" DATE, "loaded_at" TIMESTAMP_NTZ NOT NULL);
    CREATE TABLE people ("user_id" VARCHAR, "updated_at" TIMESTAMP_LTZ, "plan" VARCHAR, "score" NUMBER(38,0));
    CREATE TABLE nullable_time ("event" VARCHAR, "time" TIMESTAMP_NTZ);
  `);
  const ins = fx.db.prepare('INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?,?)');
  fx.db.transaction(() => {
    for (let i = 0; i < 1000; i++) {
      ins.run(
        `e${i % 4}`,
        new Date(T0 + i * 1000).toISOString(),
        i % 10 === 0 ? null : `u${i % 13}`,
        `ins-${i}`,
        i === 0 ? 9007199254740993n : i === 1 ? -9223372036854775807n : i,
        i + 0.25,
        i / 8,
        i === 2 ? null : JSON.stringify({ i, tags: ['a', 'b'], nested: { ok: true } }),
        i % 2,
        '2024-03-01',
        new Date(T0 + (i % 100) * 60_000).toISOString(),
      );
    }
  })();
  const people = fx.db.prepare('INSERT INTO people VALUES (?,?,?,?)');
  people.run('alice', '2024-01-01T00:00:00.000Z', 'free', 1);
  people.run('alice', '2024-02-01T00:00:00.000Z', 'pro', 2);
  people.run('alice', null, 'none', 3);
  people.run('bob', '2024-01-05T00:00:00.000Z', 'team', 4);
  people.run('bob', '2024-01-05T00:00:00.000Z', 'zeta', 5); // tie on time: the greater text wins
  people.run(null, '2024-05-01T00:00:00.000Z', 'ghost', 6);
});

afterAll(async () => {
  for (const c of open) await c.close();
  await fx?.close();
});

describe('snowflake connector through snowflake-sdk and the stand-in', () => {
  it('logs in with a password, and with an encrypted key pair; closing ends the session', async () => {
    const before = await fx.stats();
    const pw = connector();
    await pw.test();
    const kp = connector({ username: STANDIN_KEY_USER, password: undefined, private_key: fx.privateKeyPem, private_key_passphrase: STANDIN_KEY_PASSPHRASE, warehouse: undefined });
    await kp.test();
    await pw.close();
    await kp.close();
    const after = await fx.stats();
    expect(after.logins - before.logins).toBe(2);
    expect(after.sessionsClosed - before.sessionsClosed).toBe(2);
  });

  it('refuses bad credentials with a clear, non-retryable error that never echoes them', async () => {
    const wrongPw = await failure(connector({ password: 'not-the-password' }).test());
    expect(wrongPw).toBeInstanceOf(WarehouseError);
    expect((wrongPw as WarehouseError).retryable).toBe(false);
    expect(wrongPw.message).toMatch(/Snowflake refused the login .*Incorrect username or password was specified/);
    expect(wrongPw.message).not.toContain('not-the-password');

    const otherKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const wrongKey = await failure(connector({ username: STANDIN_KEY_USER, password: undefined, private_key: otherKey }).test());
    expect(wrongKey.message).toMatch(/JWT token is invalid.*RSA_PUBLIC_KEY/);

    const role = await failure(connector({ role: 'ACCOUNTADMIN' }).test());
    expect(role.message).toMatch(/Role 'ACCOUNTADMIN' specified in the connect string is not granted/);

    const account = await failure(connector({ account: 'someone-else' }).test());
    expect(account.message).toMatch(/HTTP 403.*account identifier/);
    expect((await fx.stats()).failedLogins.map((f) => f.code)).toEqual(expect.arrayContaining(['390100', '390144', '390189']));
  });

  it('says when no usable warehouse is active', async () => {
    const err = await failure(connector({ warehouse: 'NO_SUCH_WH' }).test());
    expect(err.message).toMatch(/warehouse "NO_SUCH_WH" does not exist or the role cannot use it/);
    const none = await failure(connector({ warehouse: undefined }).test());
    expect(none.message).toMatch(/no Snowflake warehouse is active/);
  });

  it('describes tables and queries with Snowflake types and nullability; a missing table is a clear error', async () => {
    const c = connector();
    expect(await c.describe({ table: 'events' })).toEqual([
      { name: 'event', type: 'text', nullable: false },
      { name: 'time', type: 'timestamp_ntz', nullable: false },
      { name: 'user_id', type: 'text', nullable: true },
      { name: 'insert_id', type: 'text', nullable: true },
      { name: 'big', type: 'fixed', nullable: true },
      { name: 'amount', type: 'fixed', nullable: true },
      { name: 'ratio', type: 'real', nullable: true },
      { name: 'props', type: 'variant', nullable: true },
      { name: 'flag', type: 'boolean', nullable: true },
      { name: 'day', type: 'date', nullable: true },
      { name: 'loaded_at', type: 'timestamp_ntz', nullable: false },
    ]);
    expect(await c.describe({ table: 'ANALYTICS.PUBLIC.nullable_time' })).toEqual([
      { name: 'event', type: 'text', nullable: true },
      { name: 'time', type: 'timestamp_ntz', nullable: true },
    ]);
    expect(await c.describe({ query: 'SELECT "event", "time" AS "t" FROM events;' })).toEqual([
      { name: 'event', type: 'text', nullable: false },
      { name: 't', type: 'timestamp_ntz', nullable: false },
    ]);
    const missing = await failure(c.describe({ table: 'no_such_table' }));
    expect(missing).toBeInstanceOf(WarehouseError);
    expect((missing as WarehouseError).retryable).toBe(false);
    expect(missing.message).toMatch(/Object 'NO_SUCH_TABLE' does not exist or not authorized.*002003/s);
  });

  it('streams typed values: integers beyond 2^53 as exact strings, VARIANT parsed, timestamps as Dates, NULL as null', async () => {
    const c = connector();
    const rows = await readAll(c, { source: { table: 'events' }, orderBy: ['insert_id'] });
    expect(rows).toHaveLength(1000);
    const byId = new Map(rows.map((r) => [r.insert_id, r]));
    expect(byId.get('ins-0')).toEqual({
      event: 'e0',
      time: new Date(T0),
      user_id: null,
      insert_id: 'ins-0',
      big: '9007199254740993',
      amount: 0.25,
      ratio: 0,
      props: { i: 0, tags: ['a', 'b'], nested: { ok: true } },
      flag: false,
      day: new Date('2024-03-01T00:00:00Z'),
      loaded_at: new Date(T0),
    });
    expect(byId.get('ins-1')!.big).toBe('-9223372036854775807');
    expect(byId.get('ins-2')!.props).toBeNull();
    expect(byId.get('ins-999')).toMatchObject({ big: 999, amount: 999.25, ratio: 124.875, flag: true, user_id: 'u11', time: new Date(T0 + 999_000) });
    // 1000 rows at 50 inline + 200 per chunk: the rest came as downloaded chunks.
    const stats = await fx.stats();
    const q = stats.queries.find((x) => x.sqlText.startsWith('SELECT * FROM events ORDER BY'));
    expect(stats.chunkRequests.filter((r) => r.queryId === q!.queryId).map((r) => r.index)).toEqual([0, 1, 2, 3, 4]);
  });

  it('pushes the latest row per key down to Snowflake (QUALIFY), excluding null keys, and counts the same rows', async () => {
    const c = connector();
    const spec: ReadSpec = {
      source: { table: 'people' },
      columns: ['user_id', 'updated_at', 'plan', 'score'],
      latestBy: { keyColumns: ['user_id'], orderColumn: 'updated_at', tieBreak: ['plan', 'score'] },
      orderBy: ['user_id'],
    };
    const rows = await readAll(c, spec);
    expect(rows).toEqual([
      { user_id: 'alice', updated_at: new Date('2024-02-01T00:00:00Z'), plan: 'pro', score: 2 },
      { user_id: 'bob', updated_at: new Date('2024-01-05T00:00:00Z'), plan: 'zeta', score: 5 },
    ]);
    expect(await c.count!(spec, ctx())).toBe(2);
    const sent = (await fx.stats()).queries.map((q) => q.sqlText);
    expect(sent).toContain(
      'SELECT "user_id", "updated_at", "plan", "score" FROM people WHERE "user_id" IS NOT NULL QUALIFY ROW_NUMBER() OVER (PARTITION BY "user_id" ORDER BY "updated_at" DESC NULLS LAST, TO_VARCHAR("plan") DESC NULLS LAST, TO_VARCHAR("score") DESC NULLS LAST) = 1 ORDER BY "user_id"',
    );
  });

  it('reads only rows at or after a time_based watermark (an ISO string of a Date it returned), and resumes at an offset', async () => {
    const c = connector();
    const watermark = new Date(T0 + 49 * 60_000).toISOString();
    const spec: ReadSpec = { source: { query: 'SELECT * FROM events' }, after: { column: 'loaded_at', value: watermark }, orderBy: ['loaded_at', 'insert_id'] };
    const all = await readAll(c, spec);
    // The 500 rows after the watermark and the 10 loaded at exactly it.
    expect(all).toHaveLength(510);
    expect(all.every((r) => (r.loaded_at as Date).getTime() >= T0 + 49 * 60_000)).toBe(true);
    expect(all.filter((r) => (r.loaded_at as Date).getTime() === T0 + 49 * 60_000)).toHaveLength(10);
    const resumed = await readAll(c, { ...spec, offset: 123 });
    expect(resumed.map((r) => r.insert_id)).toEqual(all.slice(123).map((r) => r.insert_id));
    expect(await c.count!(spec, ctx())).toBe(510);
  });

  it('turns a failing query into a non-retryable error carrying Snowflake’s message', async () => {
    const c = connector();
    const err = await failure(readAll(c, { source: { query: 'SELECT "nope" FROM events' } }));
    expect(err).toBeInstanceOf(WarehouseError);
    expect((err as WarehouseError).retryable).toBe(false);
    expect(err.message).toMatch(/Snowflake query failed: SQL compilation error.*invalid identifier 'nope'.*000904/s);
    const unknownCol = await failure(readAll(c, { source: { table: 'events' }, orderBy: ['TIME'] }));
    expect(unknownCol.message).toMatch(/did you mean time/);
  });

  it('cancels a running statement in Snowflake when the signal aborts', async () => {
    const c = connector();
    await c.test();
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 700);
    const err = await failure(readAll(c, { source: { query: 'SELECT SYSTEM$WAIT(30) AS "w"' } }, ctx(ac.signal)));
    expect(err).toBeInstanceOf(WarehouseReadAborted);
    expect(Date.now() - started).toBeLessThan(5000);
    const waitQuery = (s: Awaited<ReturnType<SnowflakeFixture['stats']>>) => s.queries.find((q) => q.sqlText.includes('SYSTEM$WAIT') && !q.sqlText.endsWith('LIMIT 0'));
    await expect.poll(async () => waitQuery(await fx.stats())?.status, { timeout: 3000 }).toBe('ABORTED');
    const stats = await fx.stats();
    expect(stats.aborts).toContain(waitQuery(stats)!.queryId);
    // The session is still usable afterwards.
    expect(await readAll(c, { source: { query: 'SELECT 1 AS "one"' } })).toEqual([{ one: 1 }]);
  });

  it('allows access_url only for origins in SNOWFLAKE_ALLOWED_ACCESS_URLS, at create time and before connecting', async () => {
    const def = definitions.snowflake!;
    const cfg = def.configSchema.parse(fx.sourceConfig());
    expect(def.checkConfig!(cfg, configFrom(fx.serverConfig))).toBeUndefined();
    expect(def.checkConfig!(cfg, configFrom({}))).toMatch(/SNOWFLAKE_ALLOWED_ACCESS_URLS/);
    const before = (await fx.stats()).logins + (await fx.stats()).failedLogins.length;
    const err = await failure(connector({}, {}).test());
    expect(err.message).toMatch(/access_url is not allowed/);
    expect((await fx.stats()).logins + (await fx.stats()).failedLogins.length).toBe(before);
  });

  it('keeps the driver quiet: no snowflake.log, nothing on stdout/stderr, no credentials anywhere', async () => {
    const written: string[] = [];
    const out = process.stdout.write.bind(process.stdout);
    const errw = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (written.push(String(chunk)), out(chunk, ...(rest as [])))) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (written.push(String(chunk)), errw(chunk, ...(rest as [])))) as typeof process.stderr.write;
    const context = ctx();
    try {
      await failure(connector({ password: 'leak-me-not' }).test());
      await readAll(connector(), { source: { table: 'people' } }, context);
    } finally {
      process.stdout.write = out;
      process.stderr.write = errw;
    }
    expect(written.join('')).toBe('');
    expect(context.lines.join('\n')).not.toContain(STANDIN_PASSWORD);
    expect(fs.existsSync('snowflake.log')).toBe(false);
  });
});

/**
 * The bigquery connector through the real @google-cloud/bigquery client against the REST
 * stand-in (test/bigquery-standin): the key exchanged for a token at its token_uri, typed values,
 * jobs.query + getQueryResults paging pulled only as fast as the consumer reads, the latest row
 * pushed down with QUALIFY, watermarks bound with the column's type, location, cancellation with
 * jobs.cancel, and the errors a data engineer sees for a bad key, a missing grant or table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../config/index.js';
import { createConnector, definitions } from '../../connectors/index.js';
import { WarehouseError, WarehouseReadAborted, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';
import { silentLogger } from '../../src/lib/logger.js';
import { TEST_WAREHOUSE_REACH } from '../helpers/app.js';
import { BQ_NO_DATA_EMAIL, BQ_NO_JOBS_EMAIL, createBigQueryFixture, rsaKeyPair, type BigQueryFixture } from '../bigquery-standin/standin-fixture.js';

const settings = configFrom(TEST_WAREHOUSE_REACH);
const ctx = (signal = new AbortController().signal) => ({ log: silentLogger, signal });

async function collect(it: AsyncIterable<Row>): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of it) rows.push(r);
  return rows;
}

const connectorFor = (config: Record<string, unknown>): WarehouseConnector => {
  const parsed = definitions.bigquery!.configSchema.parse(config);
  return createConnector('bigquery', parsed, settings);
};

describe('bigquery connector (stand-in)', () => {
  let fx: BigQueryFixture;
  let c: WarehouseConnector;

  beforeAll(async () => {
    fx = await createBigQueryFixture({ pageRows: 700 });
    fx.createTable('typed', [
      { name: 'id', type: 'INTEGER', mode: 'REQUIRED' },
      { name: 'big', type: 'INTEGER' },
      { name: 'price', type: 'NUMERIC' },
      { name: 'ok', type: 'BOOLEAN' },
      { name: 'ratio', type: 'FLOAT' },
      { name: 'ts', type: 'TIMESTAMP' },
      { name: 'day', type: 'DATE' },
      { name: 'local', type: 'DATETIME' },
      { name: 'doc', type: 'JSON' },
      { name: 'tags', type: 'STRING', mode: 'REPEATED' },
      { name: 'addr', type: 'RECORD', fields: [{ name: 'city', type: 'STRING' }, { name: 'zip', type: 'INTEGER' }] },
    ]);
    fx.insertRows('typed', [
      {
        id: 1,
        big: 9007199254740993n,
        price: '12.50',
        ok: true,
        ratio: 0.25,
        ts: new Date('2024-05-01T12:00:00.123Z'),
        day: '2024-05-01',
        local: '2024-05-01 08:30:00.000000',
        doc: { a: [1, 2], b: 'x' },
        tags: ['x', 'y'],
        addr: { city: 'Oslo', zip: 150 },
      },
      { id: 2, big: -5, price: null, ok: false, ratio: null, ts: null, day: null, local: null, doc: null, tags: null, addr: null },
    ]);
    fx.createTable('nums', [
      { name: 'n', type: 'INTEGER', mode: 'REQUIRED' },
      { name: 'label', type: 'STRING' },
    ]);
    fx.insertRows('nums', Array.from({ length: 2500 }, (_, i) => ({ n: i, label: i % 2 ? 'odd' : null })));
    c = connectorFor(fx.sourceConfig());
  });
  afterAll(async () => {
    await c?.close();
    await fx?.close();
  });

  it('exchanges the key for a token at its token_uri and passes the connection test', async () => {
    await c.test();
    expect(fx.standin.stats().tokensIssued).toBeGreaterThanOrEqual(1);
  });

  it('describes tables (tables.get) and queries (dry run), with GoogleSQL type names', async () => {
    const cols = await c.describe({ table: 'typed' });
    expect(cols.map((x) => [x.name, x.type, x.nullable])).toEqual([
      ['id', 'int64', false],
      ['big', 'int64', true],
      ['price', 'numeric', true],
      ['ok', 'bool', true],
      ['ratio', 'float64', true],
      ['ts', 'timestamp', true],
      ['day', 'date', true],
      ['local', 'datetime', true],
      ['doc', 'json', true],
      ['tags', 'array<string>', true],
      ['addr', 'struct', true],
    ]);
    const q = await c.describe({ query: 'SELECT label AS l, n, n + 1 AS m FROM `analytics.nums`' });
    expect(q.map((x) => [x.name, x.type])).toEqual([
      ['l', 'string'],
      ['n', 'int64'],
      ['m', 'int64'],
    ]);
    expect(fx.standin.stats().queries.filter((x) => x.dryRun)).toHaveLength(1);
    await expect(c.describe({ table: 'missing' })).rejects.toThrow(/table not found/);
    await expect(c.describe({ query: 'SELECT nope FROM analytics.nums' })).rejects.toBeInstanceOf(WarehouseError);
  });

  it('hands typed values over: exact INT64, NUMERIC and FLOAT64 numbers, BOOL, times as UTC Dates, JSON, REPEATED, RECORD', async () => {
    const rows = await collect(c.stream({ source: { table: 'typed' }, orderBy: ['id'] }, ctx()));
    expect(rows[0]).toEqual({
      id: 1,
      big: '9007199254740993',
      price: 12.5,
      ok: true,
      ratio: 0.25,
      ts: new Date('2024-05-01T12:00:00.123Z'),
      day: new Date('2024-05-01T00:00:00Z'),
      local: new Date('2024-05-01T08:30:00Z'),
      doc: { a: [1, 2], b: 'x' },
      tags: ['x', 'y'],
      addr: { city: 'Oslo', zip: 150 },
    });
    expect(rows[1]).toMatchObject({ id: 2, big: -5, price: null, ok: false, ts: null, doc: null, tags: [], addr: null });
    const lit = await collect(c.stream({ source: { query: 'SELECT 9007199254740993 AS big, 42 AS small' } }, ctx()));
    expect(lit).toEqual([{ big: '9007199254740993', small: 42 }]);
  });

  it('pages with pageToken/maxResults, one page at a time, and resumes exactly with an offset', async () => {
    const spec = { source: { table: 'analytics.nums' }, columns: ['n', 'label'], orderBy: ['n'] };
    expect(await c.count!(spec, ctx())).toBe(2500);
    const before = fx.standin.stats().pages.length;
    const all = await collect(c.stream(spec, ctx()));
    expect(all.map((r) => r.n)).toEqual(Array.from({ length: 2500 }, (_, i) => i));
    const pages = fx.standin.stats().pages.slice(before);
    expect(pages.map((p) => p.rows)).toEqual([700, 700, 700, 400]);

    // Back-pressure: a consumer that stops after 10 rows has caused one page, not four.
    const mark = fx.standin.stats().pages.length;
    let n = 0;
    for await (const _r of c.stream(spec, ctx())) if (++n === 10) break;
    expect(fx.standin.stats().pages.length - mark).toBe(1);

    const rest = await collect(c.stream({ ...spec, offset: 2100 }, ctx()));
    expect(rest.map((r) => r.n)).toEqual(Array.from({ length: 400 }, (_, i) => 2100 + i));
    // time_based reads from the watermark on (the rows at it again: dedupe knows them).
    const after = await collect(c.stream({ ...spec, after: { column: 'n', value: 2498 } }, ctx()));
    expect(after).toEqual([
      { n: 2498, label: null },
      { n: 2499, label: 'odd' },
    ]);
    const batches: number[] = [];
    for await (const b of c.streamBatches!(spec, ctx(), 300)) batches.push(b.length);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(2500);
    expect(Math.max(...batches)).toBeLessThanOrEqual(300);
  });

  it('pushes the latest row per key down as QUALIFY ROW_NUMBER() and binds a TIMESTAMP watermark as a TIMESTAMP', async () => {
    fx.createTable('users', [
      { name: 'user_id', type: 'STRING' },
      { name: 'updated_at', type: 'TIMESTAMP' },
      { name: 'name', type: 'STRING' },
    ]);
    fx.insertRows('users', [
      { user_id: 'u1', updated_at: new Date('2024-01-01T00:00:00Z'), name: 'Old' },
      { user_id: 'u1', updated_at: new Date('2024-02-01T00:00:00Z'), name: 'New' },
      { user_id: 'u2', updated_at: null, name: 'NoTime' },
      { user_id: 'u2', updated_at: new Date('2023-01-01T00:00:00Z'), name: 'Timed' },
      { user_id: null, updated_at: new Date('2025-01-01T00:00:00Z'), name: 'Nobody' },
    ]);
    const rows = await collect(
      c.stream({ source: { table: 'users' }, columns: ['user_id', 'updated_at', 'name'], latestBy: { keyColumns: ['user_id'], orderColumn: 'updated_at', tieBreak: ['name'] }, orderBy: ['user_id'] }, ctx()),
    );
    expect(rows.map((r) => [r.user_id, r.name])).toEqual([
      ['u1', 'New'],
      ['u2', 'Timed'],
    ]);
    expect(fx.standin.stats().queries.at(-1)!.query).toMatch(/QUALIFY ROW_NUMBER\(\) OVER \(PARTITION BY `user_id` ORDER BY `updated_at` DESC NULLS LAST, CAST\(`name` AS STRING\) DESC NULLS LAST\) = 1/);

    const later = await collect(c.stream({ source: { table: 'users' }, after: { column: 'updated_at', value: '2024-01-15T00:00:00.000Z' }, orderBy: ['user_id'] }, ctx()));
    // NULLs first in an ascending ORDER BY, as BigQuery sorts them.
    expect(later.map((r) => r.name)).toEqual(['Nobody', 'New']);
    expect(fx.standin.stats().queries.at(-1)!.parameters).toEqual([{ name: 'wh_after', parameterType: { type: 'TIMESTAMP' }, parameterValue: { value: '2024-01-15 00:00:00.000+00:00' } }]);
  });

  it('passes the location through: another location than the dataset\'s is not found there', async () => {
    const us = connectorFor(fx.sourceConfig({ location: 'US' }));
    await expect(us.test()).rejects.toThrow(/dataset .* is in location EU, not US/);
    await expect(collect(us.stream({ source: { table: 'nums' } }, ctx()))).rejects.toThrow(/dataset not found: .* in location US/);
    expect(fx.standin.stats().queries.at(-1)!.location).toBe('US');
    await us.close();
  });

  it('cancels the job (jobs.cancel) when the read is aborted while it runs and while it pages', async () => {
    const cancels = fx.standin.stats().cancels.length;
    fx.standin.setQueryDelay(30_000);
    try {
      const ac = new AbortController();
      const started = Date.now();
      const read = collect(c.stream({ source: { table: 'nums' }, orderBy: ['n'] }, ctx(ac.signal)));
      setTimeout(() => ac.abort(), 500);
      await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
      expect(Date.now() - started).toBeLessThan(5000);
      await expect.poll(() => fx.standin.stats().cancels.length).toBe(cancels + 1);
    } finally {
      fx.standin.setQueryDelay(0);
    }
    const ac = new AbortController();
    let n = 0;
    const read = (async () => {
      for await (const _row of c.stream({ source: { table: 'nums' }, orderBy: ['n'] }, ctx(ac.signal))) if (++n === 10) ac.abort();
    })();
    await expect(read).rejects.toBeInstanceOf(WarehouseReadAborted);
    expect(n).toBeLessThan(2500);
    await expect.poll(() => fx.standin.stats().cancels.length).toBe(cancels + 2);
  });

  it('a credentials JSON that is not a service-account key is refused by the config schema', () => {
    const schema = definitions.bigquery!.configSchema;
    const problems = (credentials_json: unknown) => {
      const r = schema.safeParse(fx.sourceConfig({ credentials_json }));
      return r.success ? 'accepted' : r.error.issues.map((i) => i.message).join('; ');
    };
    expect(problems('not json')).toMatch(/service-account key JSON.*not JSON/);
    expect(problems({ installed: { client_id: 'x', client_secret: 'y' } })).toMatch(/OAuth client secret, not a service-account key/);
    expect(problems({ ...fx.key(), private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' })).toMatch(/not a readable PEM private key/);
    expect(problems({ ...fx.key(), client_email: undefined })).toMatch(/client_email/);
    expect(problems(fx.key())).toBe('accepted');
  });

  it('says what is wrong: a key the token endpoint refuses, a missing grant, a missing dataset', async () => {
    const wrongKey = connectorFor(fx.sourceConfig({ credentials_json: fx.key(undefined, rsaKeyPair().privateKeyPem) }));
    const err = await wrongKey.test().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WarehouseError);
    expect((err as Error).message).toMatch(/service-account key was refused .*invalid_grant: Invalid JWT Signature/);
    expect((err as Error).message).not.toMatch(/PRIVATE KEY/);

    const noJobs = connectorFor(fx.sourceConfig({ credentials_json: fx.key(BQ_NO_JOBS_EMAIL) }));
    await expect(noJobs.test()).rejects.toThrow(/permission denied .*bigquery\.jobs\.create.*roles\/bigquery\.jobUser/);
    const noData = connectorFor(fx.sourceConfig({ credentials_json: fx.key(BQ_NO_DATA_EMAIL) }));
    await expect(noData.test()).rejects.toThrow(/permission denied .*roles\/bigquery\.dataViewer/);
    const noDataset = connectorFor(fx.sourceConfig({ dataset: 'nope' }));
    await expect(noDataset.test()).rejects.toThrow(/dataset not found: standin-project:nope/);
  });

  it('obeys the reach rules for the API endpoint and for the key\'s token_uri, at connect time', async () => {
    const defaults = configFrom({});
    const parsed = definitions.bigquery!.configSchema.parse(fx.sourceConfig());
    await expect(createConnector('bigquery', parsed, defaults).test()).rejects.toThrow(/host not allowed: 127\.0\.0\.1/);
    const tokens = fx.standin.stats().tokensIssued;
    const metadataKey = { ...fx.key(), token_uri: 'http://169.254.169.254/computeMetadata/v1/token' };
    const err = await connectorFor(fx.sourceConfig({ credentials_json: metadataKey }))
      .test()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WarehouseError);
    expect((err as Error).message).toMatch(/host not allowed: 169\.254\.169\.254/);
    expect(fx.standin.stats().tokensIssued).toBe(tokens);
  });
});

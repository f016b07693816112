/**
 * Telling an outage of our own stores from every other failure: by the error's shape first, then
 * confirmed by the stores themselves; and what it means for a run's last attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WarehouseError } from '../../connectors/warehouse.js';
import { looksLikeStoreOutage } from '../../src/lib/error-codes.js';
import { PermanentError, RetryableError, StoreUnavailableError } from '../../src/lib/errors.js';
import { endsRun, outageWaitMs } from '../../src/runs/failure.js';
import { storeOutageCheck } from '../../src/store/store-outage.js';
import type { EventStore } from '../../src/store/event-store.js';
import { createTestDb, type TestDb } from '../helpers/db.js';
import { eventStoreOf } from '../helpers/events.js';

const coded = (code: string, message = `failed: ${code}`) => Object.assign(new Error(message), { code });

describe('what looks like an outage of our own stores', () => {
  it('our unavailable-store error, a refused or reset connection, a server shutting down, a pool that lends no connection', () => {
    expect(looksLikeStoreOutage(new StoreUnavailableError('ClickHouse unavailable'))).toBe(true);
    expect(looksLikeStoreOutage(coded('ECONNREFUSED'))).toBe(true);
    expect(looksLikeStoreOutage(coded('ECONNRESET'))).toBe(true);
    expect(looksLikeStoreOutage(coded('57P01'))).toBe(true); // terminating connection due to administrator command
    expect(looksLikeStoreOutage(coded('08006'))).toBe(true);
    expect(looksLikeStoreOutage(coded('53300'))).toBe(true); // too many connections
    expect(looksLikeStoreOutage(new Error('wrapped', { cause: coded('ECONNREFUSED') }))).toBe(true);
    expect(looksLikeStoreOutage(Object.assign(new Error('Knex: Timeout acquiring a connection'), { name: 'KnexTimeoutError' }))).toBe(true);
  });

  it('never a source failure, a verdict of our own, or a statement that is wrong', () => {
    expect(looksLikeStoreOutage(new WarehouseError('connection refused by the warehouse', true, { cause: coded('ECONNREFUSED') }))).toBe(false);
    expect(looksLikeStoreOutage(new RetryableError('Amplitude still failing', { cause: coded('ECONNRESET') }))).toBe(false);
    expect(looksLikeStoreOutage(new PermanentError('bad credentials'))).toBe(false);
    expect(looksLikeStoreOutage(coded('42P01'))).toBe(false); // undefined table
    expect(looksLikeStoreOutage(coded('40001'))).toBe(false); // serialization failure: retry, but the store is there
    expect(looksLikeStoreOutage(coded('SQLITE_BUSY'))).toBe(false);
    expect(looksLikeStoreOutage(coded('ENOTFOUND'))).toBe(false);
    expect(looksLikeStoreOutage(new Error('plain'))).toBe(false);
    expect(looksLikeStoreOutage(undefined)).toBe(false);
  });

  it('waits longer after each outage in a row, at most 12× the first', () => {
    expect([0, 1, 2, 3, 4, 5, 40].map((n) => outageWaitMs(5000, n))).toEqual([5000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
    expect(outageWaitMs(200, -1)).toBe(200);
  });
});

describe('the stores confirm an outage', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb('sqlite');
  });
  afterAll(async () => {
    await t.destroy();
  });

  /** The test's event store, with a ping that fails while `down` and counts its calls. */
  const storeWith = (state: { down: boolean; pings: number }): EventStore =>
    new Proxy(eventStoreOf(t.db), {
      get(target, prop, receiver) {
        if (prop !== 'ping') return Reflect.get(target, prop, receiver);
        return async () => {
          state.pings += 1;
          if (state.down) throw new StoreUnavailableError('ClickHouse unavailable during ping');
        };
      },
    });

  it('an error that looks like one is an outage only while a store does not answer, asked once per error', async () => {
    const state = { down: true, pings: 0 };
    const check = storeOutageCheck(t.db, storeWith(state));
    const err = new StoreUnavailableError('ClickHouse unavailable during insert');
    expect(await check(err)).toBe(true);
    expect(await check(err)).toBe(true);
    expect(state.pings).toBe(1);

    state.down = false;
    expect(await check(new StoreUnavailableError('ClickHouse unavailable during insert'))).toBe(false);
    // A source's refused connection is never probed: the stores answering or not says nothing about it.
    expect(await check(new WarehouseError('refused', true, { cause: coded('ECONNREFUSED') }))).toBe(false);
    expect(await check(new PermanentError('missing table'))).toBe(false);
    expect(await check(coded('42P01'))).toBe(false);
    expect(state.pings).toBe(2);

    // An error nobody classified (pg's, when a server goes away mid-query, has no code) is asked about.
    const midQuery = new Error('select 1 - Connection terminated unexpectedly');
    expect(await check(midQuery)).toBe(false);
    state.down = true;
    expect(await check(new Error('select 1 - Connection terminated unexpectedly'))).toBe(true);
    expect(state.pings).toBe(4);
  });

  it('a last attempt meeting an outage does not end the run; any other failure on it does, and a permanent one always', async () => {
    const outage = { storeOutage: async () => true };
    const up = { storeOutage: async () => false };
    const err = coded('ECONNREFUSED');
    expect(await endsRun(err, true, outage)).toBe(false);
    expect(await endsRun(err, true, up)).toBe(true);
    expect(await endsRun(err, false, up)).toBe(false);
    expect(await endsRun(new PermanentError('missing table'), false, outage)).toBe(true);
  });
});

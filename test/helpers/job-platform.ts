/**
 * Helpers for the job platform's tests: batch files of generated events, an in-process worker
 * runtime on a test config, polling, and Redis key inspection under a queue prefix.
 */
import { eventStoreOf } from './events.js';
import zlib from 'node:zlib';
import type { Config } from '../../config/index.js';
import { handlers } from '../../jobs/index.js';
import { WorkerRuntime, type HandlerMap } from '../../jobs/worker-runtime.js';
import type { Db } from '../../src/db/knex.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import type { QueueName } from '../../src/queue/catalog.js';
import { JobQueues } from '../../src/queue/queues.js';
import { createRedisConnections, type RedisConnections } from '../../src/queue/redis-connection.js';

export const BASE_TIME = Date.UTC(2024, 0, 1);

/** Event i of a generated file: unique (event, distinct_id, time), no $insert_id (derived). */
export function generatedEvent(i: number): Record<string, unknown> {
  return {
    event: i % 3 === 0 ? 'signup' : 'page_view',
    properties: { time: BASE_TIME + i * 1000, distinct_id: `user-${i % 5000}`, seq: i, url: `/p/${i % 97}` },
  };
}

/** `n` events as NDJSON, built a slice at a time (200k events is ~25 MB). */
export function ndjsonEvents(n: number, from = 0): Buffer {
  const parts: string[] = [];
  for (let i = from; i < from + n; i++) parts.push(JSON.stringify(generatedEvent(i)));
  return Buffer.from(`${parts.join('\n')}\n`);
}

export function gzip(buf: Buffer): Buffer {
  return zlib.gzipSync(buf, { level: 1 });
}

/** fetch's typings want a BodyInit; a Uint8Array view of the Buffer is one. */
export function body(buf: Buffer): Uint8Array<ArrayBuffer> {
  const copy = new Uint8Array(new ArrayBuffer(buf.byteLength));
  copy.set(buf);
  return copy;
}

export async function until<T>(probe: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface InProcessWorker {
  runtime: WorkerRuntime;
  queues: JobQueues;
  close: () => Promise<void>;
}

/** A worker runtime in this process, on the test app's config (same prefix and database). */
export async function startInProcessWorker(
  db: Db,
  config: Config,
  options: { handlers?: HandlerMap; queueNames?: QueueName[] } = {},
): Promise<InProcessWorker> {
  const queues = new JobQueues(createRedisConnections(config));
  const runtime = new WorkerRuntime({
    config,
    db,
    events: eventStoreOf(db),
    log: silentLogger,
    secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)),
    queues,
    handlers: options.handlers ?? handlers,
    queueNames: options.queueNames,
  }).start();
  await runtime.ready();
  return {
    runtime,
    queues,
    close: async () => {
      await runtime.close();
      await queues.close();
    },
  };
}

/** Every key under the BullMQ prefix, on every master (SCAN, never KEYS). */
export function keysUnder(redis: RedisConnections): Promise<string[]> {
  return redis.scanKeys(`${redis.prefix}:*`);
}

/** Deletes every key under the BullMQ prefix on every master (a "Redis loss" of this deployment only). */
export function deleteKeysUnder(redis: RedisConnections): Promise<number> {
  return redis.deleteKeys(`${redis.prefix}:*`);
}

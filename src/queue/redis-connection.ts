/**
 * The one Redis connection factory. Every Queue, Worker, QueueEvents, FlowProducer, lock key,
 * readiness check and Bull Board adapter gets its client and its BullMQ prefix from here, so
 * with REDIS_CLUSTER_NODES set nothing ever dials REDIS_URL.
 *
 * On a cluster the prefix is hash-tagged (`{analytics}`, the form BullMQ documents): BullMQ's
 * Lua scripts touch several keys of a queue at once, and a flow's child completing updates its
 * parent's keys, so all of them must hash to one slot. One tag per deployment (not per queue)
 * keeps flows whose parent and children sit in different queues legal.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../../config/index.js';
import { redactUrl } from '../lib/redact-url.js';
import { withTimeout } from '../lib/with-timeout.js';

export type RedisClient = Redis | Cluster;

export type RedisSettings = Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'REDIS_PASSWORD' | 'QUEUE_PREFIX'>;

/** `{prefix}` on a cluster unless the prefix already carries a hash tag; unchanged on plain Redis (today's keys). */
export function bullPrefix(prefix: string, cluster: boolean): string {
  if (!cluster || /\{[^{}]+\}/.test(prefix)) return prefix;
  return `{${prefix}}`;
}

export class RedisConnections {
  readonly kind: 'redis' | 'cluster';
  /** The BullMQ `prefix` option for every Queue, Worker, QueueEvents and FlowProducer. */
  readonly prefix: string;
  private shared: RedisClient | undefined;

  constructor(private readonly settings: RedisSettings) {
    this.kind = settings.REDIS_CLUSTER_NODES.length > 0 ? 'cluster' : 'redis';
    this.prefix = bullPrefix(settings.QUEUE_PREFIX, this.kind === 'cluster');
  }

  /** Where Redis is, for messages (never with the password). */
  describe(): string {
    return this.kind === 'cluster'
      ? `REDIS_CLUSTER_NODES=${this.settings.REDIS_CLUSTER_NODES.map((n) => `${n.host}:${n.port}`).join(',')}`
      : `REDIS_URL=${redactUrl(this.settings.REDIS_URL)}`;
  }

  /**
   * A new client that BullMQ may use for anything, blocking Workers included
   * (`maxRetriesPerRequest: null`: a command waits for a reconnect instead of failing). The caller
   * closes it.
   */
  connect(extra: RedisOptions = {}): RedisClient {
    const options: RedisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true, ...extra };
    if (this.kind === 'redis') return new Redis(this.settings.REDIS_URL, options);
    const { retryStrategy, lazyConnect, enableOfflineQueue, ...redisOptions } = options;
    const clusterOptions: ClusterOptions = {
      redisOptions: { ...redisOptions, password: this.settings.REDIS_PASSWORD },
      lazyConnect,
      enableOfflineQueue,
      // A restarted or failed-over master: re-read the slot map soon, keep retrying the cluster.
      clusterRetryStrategy: retryStrategy === undefined ? (times) => Math.min(100 * times, 2000) : retryStrategy,
      slotsRefreshTimeout: 2000,
      // Re-read the slot map now and then, so a master that restarted rejoins the pool even when
      // no command has been redirected yet.
      slotsRefreshInterval: 5000,
      enableReadyCheck: true,
    };
    return new Cluster(
      this.settings.REDIS_CLUSTER_NODES.map((n) => ({ host: n.host, port: n.port })),
      clusterOptions,
    );
  }

  /** The process's shared client (queues, locks, readiness); created on first use, closed by close(). */
  get client(): RedisClient {
    this.shared ??= this.connect();
    return this.shared;
  }

  /** Every master: a cluster answers only when all of its slots do. */
  masters(client: RedisClient = this.client): Redis[] {
    return client instanceof Cluster ? client.nodes('master') : [client];
  }

  /**
   * Readiness: a PING to every master, and on a cluster also: the cluster says it is ok and every
   * master serving slots is connected (ioredis drops a node it lost from its pool, so pinging the
   * pool alone would miss it). Bounded, so a client waiting for a reconnect never hangs /readyz.
   */
  async ping(timeoutMs = 2000): Promise<void> {
    const client = this.client;
    await withTimeout(this.check(client), timeoutMs);
  }

  private async check(client: RedisClient): Promise<void> {
    await client.ping();
    if (client instanceof Cluster) {
      const info = await client.cluster('INFO');
      if (!/^cluster_state:ok/m.test(info)) throw new Error('redis cluster_state is not ok');
      const serving = new Set((await client.cluster('SLOTS')).map(([, , [host, port]]) => `${host}:${port}`));
      const missing = () => {
        const connected = new Set(this.masters(client).map((m) => `${m.options.host}:${m.options.port}`));
        return [...serving].filter((node) => !connected.has(node));
      };
      // A master that came back is re-added only by a slot refresh: ask for one before judging.
      if (missing().length > 0) await new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve()));
      if (missing().length > 0) throw new Error(`redis cluster master(s) not connected: ${missing().join(', ')}`);
    }
    await Promise.all(this.masters(client).map((m) => m.ping()));
  }

  /** Fails in one clear line when Redis does not answer, instead of a stack of retry noise. */
  async assertReachable(timeoutMs = 3000): Promise<void> {
    const probe = this.connect({ lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs });
    probe.on('error', () => {});
    try {
      await withTimeout(probe.connect(), timeoutMs);
      await withTimeout(probe.ping(), timeoutMs);
    } catch {
      throw new Error(`Redis is not reachable at ${this.describe()}: start it (redis-server --daemonize yes) or set REDIS_URL / REDIS_CLUSTER_NODES.`);
    } finally {
      probe.disconnect();
    }
  }

  /** Every key matching `pattern` (SCAN on each master, never KEYS). */
  async scanKeys(pattern: string): Promise<string[]> {
    const perMaster = await Promise.all(this.masters().map((node) => scanNode(node, pattern)));
    return perMaster.flat();
  }

  /** Deletes every key matching `pattern` on every master; returns how many. */
  async deleteKeys(pattern: string): Promise<number> {
    let deleted = 0;
    for (const node of this.masters()) {
      const keys = await scanNode(node, pattern);
      // One DEL per key, sent to the master holding it: a cluster refuses multi-key DELs across slots.
      for (let i = 0; i < keys.length; i += 500) {
        const pipeline = node.pipeline();
        for (const key of keys.slice(i, i + 500)) pipeline.del(key);
        await pipeline.exec();
      }
      deleted += keys.length;
    }
    return deleted;
  }

  async close(): Promise<void> {
    const client = this.shared;
    this.shared = undefined;
    if (client) await client.quit().catch(() => client.disconnect());
  }
}

async function scanNode(node: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** The factory for this process's configuration. */
export function createRedisConnections(settings: RedisSettings): RedisConnections {
  return new RedisConnections(settings);
}

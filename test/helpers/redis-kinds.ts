/**
 * The Redis a job-platform suite runs against, the way `dbKinds()` picks databases: plain Redis
 * always, a Redis Cluster too when TEST_REDIS_CLUSTER_NODES is set (.ci/run starts one on
 * 127.0.0.1:7101-7103 and sets it). `redisOverrides(kind)` is the config slice a suite spreads
 * into testConfig/startTestApp; on the cluster REDIS_URL points at a closed port, so any code
 * path that still dialled the default Redis would fail the suite.
 */
import type { Config } from '../../config/index.js';

export type RedisKind = 'redis' | 'cluster';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_REDIS_CLUSTER_NODES = process.env.TEST_REDIS_CLUSTER_NODES ?? '';
/** Nothing listens here (port 1 is privileged and unused): a client dialling it fails at once. */
export const CLOSED_REDIS_URL = 'redis://127.0.0.1:1';

export function redisKinds(): RedisKind[] {
  return TEST_REDIS_CLUSTER_NODES ? ['redis', 'cluster'] : ['redis'];
}

export function redisOverrides(kind: RedisKind): { REDIS_URL: string; REDIS_CLUSTER_NODES: string } {
  return kind === 'cluster'
    ? { REDIS_URL: CLOSED_REDIS_URL, REDIS_CLUSTER_NODES: TEST_REDIS_CLUSTER_NODES }
    : { REDIS_URL: TEST_REDIS_URL, REDIS_CLUSTER_NODES: '' };
}

/** Both axes of a job-platform suite: every database kind × every Redis kind. */
export function crossKinds<D>(dbs: readonly D[]): [D, RedisKind][] {
  return dbs.flatMap((d) => redisKinds().map((r) => [d, r] as [D, RedisKind]));
}

/** The Redis part of a spawned process's environment: the same Redis (or cluster) and prefix as `config`. */
export function redisEnv(config: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'QUEUE_PREFIX'>): Record<string, string> {
  return {
    REDIS_URL: config.REDIS_URL,
    REDIS_CLUSTER_NODES: config.REDIS_CLUSTER_NODES.map((n) => `${n.host}:${n.port}`).join(','),
    QUEUE_PREFIX: config.QUEUE_PREFIX,
  };
}

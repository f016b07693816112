/**
 * Worker scaling (issue 14): sync throughput of one partitioned run (a 1M-row SQLite table at
 * scale 1, SYNC_PARTITION_ROWS = rows/16) with 1, 2 and 4 `worker` processes, on plain Redis and
 * on a Redis Cluster (BENCH_REDIS_CLUSTER_NODES, default the CI cluster on 127.0.0.1:7101-7103
 * when it answers). The store is PostgreSQL when reachable (several writers can use it), else
 * SQLite (one writer: the floor more workers run into). Ratio: against 1 worker on the same Redis.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { configFrom } from '../config/index.js';
import { createRedisConnections } from '../src/queue/redis-connection.js';
import { pgReachable } from './pg-reachable.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { syncWithWorkers, type ScalingArgs } from './worker-scaling-cases.js';
import { buildSqliteSource, dropPostgresSchema } from './warehouse-sync-cases.js';

const WORKERS = [1, 2, 4] as const;

async function clusterAnswers(nodes: string): Promise<boolean> {
  const redis = createRedisConnections(configFrom({ REDIS_CLUSTER_NODES: nodes }));
  try {
    await redis.assertReachable(2000);
    return true;
  } catch {
    return false;
  }
}

export const bench: BenchModule = {
  title: 'worker scaling: one partitioned sync over 1, 2, 4 worker processes, plain Redis and Redis Cluster',
  run: async (ctx: BenchContext) => {
    const rows = Math.max(20_000, Math.round(1_000_000 * ctx.scale));
    const partitionRows = Math.ceil(rows / 16);
    const hasPg = await pgReachable(ctx.pgUrl);
    const redisKinds: { label: string; redis: ScalingArgs['redis'] }[] = [{ label: 'Redis', redis: { REDIS_URL: ctx.redisUrl, REDIS_CLUSTER_NODES: '' } }];
    const nodes = ctx.redisClusterNodes;
    const out: BenchRow[] = [];
    const section = 'worker scaling';
    if (nodes && (await clusterAnswers(nodes))) redisKinds.push({ label: 'Redis Cluster', redis: { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: nodes } });
    else out.push({ section, name: 'Redis Cluster rows', unit: '', value: 0, note: `skipped: no cluster answers at ${nodes ?? '(BENCH_REDIS_CLUSTER_NODES unset)'}` });

    const sourceFile = path.join(ctx.tmpDir, 'scaling-src.sqlite');
    ctx.log(`worker scaling: building a ${rows.toLocaleString('en-US')}-row SQLite source`);
    buildSqliteSource(sourceFile, rows);
    const schemas: string[] = [];
    let n = 0;
    const store = (): Pick<ScalingArgs, 'store' | 'storeSchema'> => {
      if (!hasPg) return { store: path.join(ctx.tmpDir, `scaling-store-${++n}.sqlite`) };
      const s = `scaling_${crypto.randomBytes(4).toString('hex')}`;
      schemas.push(s);
      return { store: ctx.pgUrl!, storeSchema: s };
    };
    const k = rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${Math.round(rows / 1000)}k`;
    try {
      for (const kind of redisKinds) {
        let one: number | undefined;
        for (const workers of WORKERS) {
          ctx.log(`worker scaling: ${k} rows, ${workers} worker(s), ${kind.label}`);
          const r = await syncWithWorkers({ rows, workers, partitionRows, sourceFile, redis: kind.redis, ...store() });
          if (r.stored !== rows) throw new Error(`worker scaling: stored ${r.stored} of ${rows} events`);
          const rate = rows / r.seconds;
          one ??= rate;
          out.push({
            section,
            name: `sync ${k} rows, ${workers} worker${workers > 1 ? 's' : ''}, ${kind.label}`,
            unit: 'rows/s',
            value: rate,
            ratio: `${(rate / one).toFixed(2)}× of 1 worker`,
            note: `${r.partitions} partitions on ${r.workersUsed} worker(s); ${hasPg ? 'Postgres' : 'SQLite'} store`,
          });
        }
      }
    } finally {
      for (const s of schemas) await dropPostgresSchema(ctx.pgUrl!, s).catch(() => {});
      fs.rmSync(sourceFile, { force: true });
    }
    return out;
  },
};

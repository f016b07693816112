/** One measured line of the bench table. */
export interface BenchRow {
  section: string;
  name: string;
  /** e.g. events/s, rows/s, ms */
  unit: string;
  value: number;
  /** Ratio against the same run's baseline, as text like "0.82 of floor". */
  ratio?: string;
  peakRssMb?: number;
  note?: string;
}

export interface BenchContext {
  /** Multiplier on data sizes: BENCH_SCALE=0.1 for a quick run. */
  scale: number;
  /** Postgres to bench against, when reachable. */
  pgUrl?: string;
  redisUrl: string;
  /** ClickHouse to bench against (BENCH_CLICKHOUSE_URL), when reachable. */
  clickhouseUrl: string;
  /** `host:port,…` of a Redis Cluster for the cluster rows (BENCH_REDIS_CLUSTER_NODES; default the CI cluster). */
  redisClusterNodes?: string;
  /** A temp dir owned by this run. */
  tmpDir: string;
  log: (msg: string) => void;
}

/** A bench/*.bench.ts file exports `bench: BenchModule`. */
export interface BenchModule {
  title: string;
  run: (ctx: BenchContext) => Promise<BenchRow[]>;
}

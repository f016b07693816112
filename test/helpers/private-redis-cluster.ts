/**
 * A Redis Cluster of its own for a test that restarts masters (the shared one on 7101-7103 must
 * not go down under other suites): three masters on free ports, started and stopped by
 * .ci/redis-cluster.sh with its own directory.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = path.resolve(import.meta.dirname, '../../.ci/redis-cluster.sh');

export const canStartRedisCluster = (() => {
  try {
    return fs.existsSync(SCRIPT) && ['redis-server', 'redis-cli'].every((b) => process.env.PATH?.split(':').some((d) => fs.existsSync(path.join(d, b))));
  } catch {
    return false;
  }
})();

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** Three ports p with p and its cluster bus port p+10000 free. */
async function freePorts(): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 21000 + Math.floor(Math.random() * 9000);
    const ports = [base, base + 1, base + 2];
    const all = await Promise.all(ports.flatMap((p) => [portFree(p), portFree(p + 10000)]));
    if (all.every(Boolean)) return ports;
  }
  throw new Error('no free ports for a private Redis Cluster');
}

export interface PrivateRedisCluster {
  /** REDIS_CLUSTER_NODES for this cluster. */
  nodes: string;
  ports: number[];
  /** Shuts the node on `port` down (SHUTDOWN, not NOSAVE: with appendonly the AOF is flushed, as a clean restart would). */
  down(port: number): Promise<void>;
  /** Starts every node that is down and waits for cluster_state:ok. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Picks free ports and starts the cluster. `onCreated` receives the handle BEFORE the nodes are
 * started, so a caller whose hook times out mid-start can still stop what was started.
 */
export async function startPrivateRedisCluster(options: { appendonly: boolean; onCreated?: (c: PrivateRedisCluster) => void }): Promise<PrivateRedisCluster> {
  const ports = await freePorts();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cluster-'));
  const env = { ...process.env, REDIS_CLUSTER_PORTS: ports.join(' '), REDIS_CLUSTER_DIR: dir, REDIS_CLUSTER_APPENDONLY: options.appendonly ? 'yes' : 'no' };
  const script = (...args: string[]) => run('bash', [SCRIPT, ...args], { env, timeout: 60_000 });
  const cluster: PrivateRedisCluster = {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ports,
    down: async (port) => {
      // redis-cli exits non-zero when the server closes the connection on SHUTDOWN.
      await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'shutdown']).catch(() => {});
    },
    up: async () => {
      await script('start');
    },
    stop: async () => {
      await script('stop');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  options.onCreated?.(cluster);
  await script('start');
  return cluster;
}

/**
 * A ClickHouse server of a test's own (default HTTP port 8126), which the test may stop and
 * start — never the shared 8123 or the shard pair other tests use. Runs in the foreground as a
 * child process with a generated 18.16-format config and a data directory kept across restarts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface LoneClickHouse {
  /** clickhouse://default:@127.0.0.1:<port>/ */
  url: string;
  start(): Promise<void>;
  /** SIGKILL: the server dies the way a crashed host does. */
  kill(): Promise<void>;
  destroy(): Promise<void>;
}

function remoteServers(cluster: { name: string; tcpPorts: number[] } | undefined): string {
  if (!cluster) return '';
  const shards = cluster.tcpPorts.map((p) => `<shard><replica><host>127.0.0.1</host><port>${p}</port></replica></shard>`).join('');
  return `  <remote_servers><${cluster.name}>${shards}</${cluster.name}></remote_servers>`;
}

async function answers(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/?query=SELECT%201`);
    return res.ok;
  } catch {
    return false;
  }
}

/** `cluster`: a remote_servers entry of one shard per TCP port (servers of this helper listen on HTTP + 1000). */
export async function createLoneClickHouse(httpPort = 8126, options: { cluster?: { name: string; tcpPorts: number[] } } = {}): Promise<LoneClickHouse> {
  if (await answers(httpPort)) throw new Error(`port ${httpPort} already serves ClickHouse: another test owns it`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clickhouse-lone-'));
  const config = path.join(dir, 'config.xml');
  fs.mkdirSync(path.join(dir, 'data', 'tmp'), { recursive: true });
  fs.writeFileSync(
    config,
    `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${httpPort + 1000}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/data/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <mlock_executable>false</mlock_executable>
${remoteServers(options.cluster)}
</yandex>
`,
  );
  let child: ChildProcess | undefined;
  const server: LoneClickHouse = {
    url: `clickhouse://default:@127.0.0.1:${httpPort}/`,
    async start() {
      child = spawn('clickhouse-server', [`--config-file=${config}`], { stdio: 'ignore' });
      for (let i = 0; i < 150; i++) {
        if (await answers(httpPort)) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`test ClickHouse on ${httpPort} did not start (see ${dir}/server.err.log)`);
    },
    async kill() {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    },
    async destroy() {
      await server.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** Spawns one of the service's processes (src/bin/*.ts) with the given environment. */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Config } from '../../config/index.js';
import { TEST_SECRETS_KEY, TEST_WAREHOUSE_REACH } from './app.js';
import { redisEnv } from './redis-kinds.js';

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  /** Resolves when a line of output matches, rejects on exit or timeout. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  kill: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export function spawnBin(bin: string, env: Record<string, string | undefined>): Spawned {
  const child = spawn(process.execPath, ['--import', 'tsx', `src/bin/${bin}.ts`], {
    env: { ...process.env, NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            cleanup();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${out}`));
        }, timeoutMs);
        const onExit = () => {
          cleanup();
          reject(new Error(`process exited before ${pattern}; output:\n${out}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      }),
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * A `worker` process, added to `running` (so the test's cleanup can kill it), once it has started
 * its queues' workers. Needs LOG_LEVEL info or lower in `env`: it waits for the "worker started" line.
 */
export async function startWorkerProcess(env: Record<string, string | undefined>, running: Spawned[]): Promise<Spawned> {
  const proc = spawnBin('worker', env);
  running.push(proc);
  await proc.waitFor(/"msg":"worker started"/, 60_000);
  return proc;
}

/** SIGTERM, as a deploy or a scale-down sends it, then the exit: its code and how long the graceful shutdown took. */
export async function terminate(proc: Spawned): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const code = await proc.kill('SIGTERM');
  return { code, ms: Date.now() - started };
}

/**
 * The environment of a spawned service process on a test's database, Redis (or cluster), secrets
 * key and reach rules, plus `extra`.
 */
export function serviceEnv(databaseUrl: string, config: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'QUEUE_PREFIX'>, extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: databaseUrl, ...redisEnv(config), SECRETS_KEY: TEST_SECRETS_KEY, ...TEST_WAREHOUSE_REACH, ...extra };
}

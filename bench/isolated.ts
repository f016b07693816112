/**
 * Runs one measurement in a fresh child process, with the worker process's node flags, so its
 * peak RSS is its own: the child imports `modulePath`, calls `exportName(args)`, and reports the
 * result with `process.resourceUsage().maxRSS`.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface IsolatedOptions {
  /** V8's old-space limit for the child (`--max-old-space-size`): what it must live within. */
  heapMb?: number;
}

/**
 * The node flags the Procfile's `worker` runs with (`--max-semi-space-size=…`): every measurement
 * here is a job a worker runs, so it runs under the same V8 settings, read from the Procfile so
 * the two cannot drift apart.
 */
const WORKER_NODE_FLAGS = (() => {
  const line = fs.readFileSync(path.join(here, '..', 'Procfile'), 'utf8').split('\n').find((l) => l.startsWith('worker:'));
  if (!line) throw new Error('Procfile has no worker process');
  return line.split(/\s+/).filter((arg) => arg.startsWith('--'));
})();

/** BENCH_CPU_PROF_DIR: every isolated measurement under `--cpu-prof` (one file per thread there). */
function profileArgs(): string[] {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

export async function runIsolated<T>(modulePath: string, exportName: string, args: unknown, options: IsolatedOptions = {}): Promise<{ result: T; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, 'isolated-child.ts'), [], {
      execArgv: ['--import', 'tsx', ...WORKER_NODE_FLAGS, ...(options.heapMb ? [`--max-old-space-size=${options.heapMb}`] : []), ...profileArgs()],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (msg: { ok: boolean; result?: T; error?: string; maxRssKb: number }) => {
      if (msg.ok) resolve({ result: msg.result as T, peakRssMb: Math.round(msg.maxRssKb / 1024) });
      else reject(new Error(msg.error));
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`isolated bench child exited with ${code}`));
    });
    child.send({ url: pathToFileURL(path.resolve(modulePath)).href, exportName, args });
  });
}

/**
 * Runs one measurement in a fresh child process, with the node flags of the process it stands
 * for, so its peak RSS is its own: the child imports `modulePath`, calls `exportName(args)`, and
 * reports the result with `process.resourceUsage().maxRSS`.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface IsolatedOptions {
  /** V8's old-space limit for the child (`--max-old-space-size`): what it must live within. */
  heapMb?: number;
  /** Whose node flags the child runs with; a job's (`worker`) unless said. */
  as?: ProcessKind;
}

/** The Procfile process a measurement stands for: a job (`worker`) or a request (`web`, and the floors). */
export type ProcessKind = 'worker' | 'web';

/**
 * The node flags that Procfile process runs with (`--max-semi-space-size=…`, the worker's
 * `--heap-growing-percent=…`): a measurement runs under the V8 settings of the process that does
 * that work in production, read from the Procfile so the two cannot drift apart. Floors run as
 * `web`, without the worker's tighter heap growth: the fastest settings, so no ratio is flattered.
 */
const PROCFILE_LINES = fs.readFileSync(path.join(here, '..', 'Procfile'), 'utf8').split('\n');

function procfileNodeFlags(kind: ProcessKind): string[] {
  const line = PROCFILE_LINES.find((l) => l.startsWith(`${kind}:`));
  if (!line) throw new Error(`Procfile has no ${kind} process`);
  return line.split(/\s+/).filter((arg) => arg.startsWith('--'));
}

/** BENCH_NODE_FLAGS (space-separated, read per run) replaces them: A/B of V8 settings in one run. */
function nodeFlags(kind: ProcessKind): string[] {
  const flags = process.env.BENCH_NODE_FLAGS;
  return flags === undefined ? procfileNodeFlags(kind) : flags.split(/\s+/).filter(Boolean);
}

/** BENCH_CPU_PROF_DIR: every isolated measurement under `--cpu-prof` (one file per thread there). */
function profileArgs(): string[] {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

export async function runIsolated<T>(modulePath: string, exportName: string, args: unknown, options: IsolatedOptions = {}): Promise<{ result: T; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, 'isolated-child.ts'), [], {
      execArgv: ['--import', 'tsx', ...nodeFlags(options.as ?? 'worker'), ...(options.heapMb ? [`--max-old-space-size=${options.heapMb}`] : []), ...profileArgs()],
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

/**
 * Runs one measurement in a fresh child process so its peak RSS is its own: the child imports
 * `modulePath`, calls `exportName(args)`, and reports the result with `process.resourceUsage().maxRSS`.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface IsolatedOptions {
  /** V8's old-space limit for the child (`--max-old-space-size`): what it must live within. */
  heapMb?: number;
}

export async function runIsolated<T>(modulePath: string, exportName: string, args: unknown, options: IsolatedOptions = {}): Promise<{ result: T; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, 'isolated-child.ts'), [], {
      execArgv: ['--import', 'tsx', ...(options.heapMb ? [`--max-old-space-size=${options.heapMb}`] : [])],
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

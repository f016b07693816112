/**
 * Runs a bench client script (ingest-client.ts, list-client.ts) in a process of its own, so its
 * CPU and memory are not the measured server's: sends it the job, resolves with its one answer.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function runClientProcess<T>(script: string, job: object): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, script), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve(m as T));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`bench client ${script} exited with ${code}`)));
    child.send(job);
  });
}

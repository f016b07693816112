/** Starts the Snowflake stand-in in a child process; same controls as the in-process handle, async. */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StandinOptions, StandinStats } from './standin.server.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface StandinProcess {
  url: string;
  pid: number;
  stats(): Promise<StandinStats>;
  close(): Promise<void>;
}

export async function startStandinProcess(options: StandinOptions): Promise<StandinProcess> {
  const child: ChildProcess = fork(path.join(here, 'standin-child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const request = <T>(msg: object, reply: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: { type: string; error?: string } & Record<string, unknown>) => {
        if (m.type === reply) {
          child.off('message', onMessage);
          child.off('exit', onExit);
          resolve(m as T);
        } else if (m.type === 'error') {
          child.off('message', onMessage);
          child.off('exit', onExit);
          reject(new Error(`stand-in: ${m.error}`));
        }
      };
      const onExit = (code: number | null) => reject(new Error(`stand-in process exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send(msg);
    });
  const { url } = await request<{ url: string }>({ type: 'start', options }, 'started');
  return {
    url,
    pid: child.pid!,
    stats: async () => (await request<{ stats: StandinStats }>({ type: 'stats' }, 'stats')).stats,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      try {
        await request({ type: 'close' }, 'closed');
      } catch {
        child.kill();
      }
      await exited;
    },
  };
}

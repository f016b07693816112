/**
 * The service as users run it, for the bench: `npm start` (release, web, worker and scheduler in
 * one process) in its own process group, with its real request logging (pino JSON lines to a log
 * file) and its rate limiter on. The bench reads the server's CPU time and peak RSS from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ServiceProcess {
  url: string;
  /** CPU seconds (user + system) of the whole process tree so far. */
  cpuSeconds: () => number;
  /** CPU seconds of the service's main thread alone (the SQLite writer, the HTTP server). */
  mainThreadCpuSeconds: () => number;
  /** The largest peak RSS (VmHWM) of any process of the tree, MB. */
  peakRssMb: () => number;
  stop: () => Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function childrenOf(pid: number): number[] {
  try {
    return fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function tree(pid: number): number[] {
  const out = [pid];
  for (const c of childrenOf(pid)) out.push(...tree(c));
  return out;
}

const TICKS = 100; // USER_HZ on Linux

/** CPU seconds of a process (`/proc/<pid>/stat`) or of one of its threads (`/proc/<pid>/task/<tid>/stat`). */
function cpuOf(pid: number, statFile = `/proc/${pid}/stat`): number {
  try {
    const fields = fs.readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

function hwmMbOf(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

async function waitReady(url: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`npm start did not get ready in 60 s: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
}

/** Starts `npm start` with `env` on top of this process's environment; resolves once /readyz answers. */
export async function startService(env: Record<string, string>, logFile: string): Promise<ServiceProcess> {
  const port = await freePort();
  const out = fs.openSync(logFile, 'a');
  // BENCH_CPU_PROF_DIR: what `npm start` runs, under `node --cpu-prof` (not allowed in NODE_OPTIONS);
  // each thread writes a V8 CPU profile there on exit (bench/profile-summary.ts reads them). The
  // young-generation size is the one package.json's start script sets.
  const profDir = process.env.BENCH_CPU_PROF_DIR;
  const [command, argv] = profDir
    ? ['node', ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--max-semi-space-size=32', '--import', 'tsx', 'src/bin/all-in-one.ts']]
    : ['npm', ['start', '--silent']];
  const child = spawn(command, argv, {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', out, out],
    detached: true,
  });
  fs.closeSync(out);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, child, logFile);
  const pid = child.pid!;
  return {
    url,
    cpuSeconds: () => tree(pid).reduce((sum, p) => sum + cpuOf(p), 0),
    // npm and tsx's launcher are in the tree too, idle: the busiest main thread is the service's.
    mainThreadCpuSeconds: () => Math.max(...tree(pid).map((p) => cpuOf(p, `/proc/${p}/task/${p}/stat`))),
    peakRssMb: () => Math.max(...tree(pid).map(hwmMbOf)),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      process.kill(-pid, 'SIGTERM');
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

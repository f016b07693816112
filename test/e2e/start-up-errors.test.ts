/**
 * What an operator sees when a process cannot start: one line naming what to fix and a non-zero
 * exit, never a stack; and `START_PROCESSES=release` alone migrates and exits.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, TEST_SECRETS_KEY } from '../helpers/app.js';
import { spawnBin, type Spawned } from '../helpers/spawn.js';

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-up-errors-'));
const running: Spawned[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.kill('SIGKILL')));
  fs.rmSync(dir, { recursive: true, force: true });
});

const base = { SECRETS_KEY: TEST_SECRETS_KEY, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `sue-${process.pid}`, LOG_LEVEL: 'warn' };

async function exitOf(proc: Spawned): Promise<{ code: number | null; lines: string[] }> {
  running.push(proc);
  const code = await proc.exited;
  return { code, lines: proc.output().trim().split('\n') };
}

describe('start-up errors', () => {
  it('START_PROCESSES=release alone applies the migrations and exits 0', async () => {
    const file = path.join(dir, 'release-only.sqlite');
    const { code, lines } = await exitOf(spawnBin('all-in-one', { ...base, LOG_LEVEL: 'info', DATABASE_URL: file, START_PROCESSES: 'release' }));
    expect(code).toBe(0);
    expect(lines.join('\n')).toMatch(/"msg":"migrations applied"/);
    expect(fs.existsSync(file)).toBe(true);
  });

  it('an unknown START_PROCESSES name is a configuration error listing the valid ones', async () => {
    const { code, lines } = await exitOf(spawnBin('all-in-one', { ...base, DATABASE_URL: path.join(dir, 'x.sqlite'), START_PROCESSES: 'web,wroker' }));
    expect(code).toBe(1);
    expect(lines.join('\n')).toMatch(/START_PROCESSES: unknown 'wroker': a comma-separated subset of release, web, worker, scheduler/);
  });

  it('a worker whose WORKER_METRICS_PORT is taken says so in one line', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const { code, lines } = await exitOf(
        spawnBin('worker', { ...base, HOST: '127.0.0.1', DATABASE_URL: path.join(dir, 'w.sqlite'), WORKER_METRICS_PORT: String(port) }),
      );
      expect(code).toBe(1);
      expect(lines).toEqual([`WORKER_METRICS_PORT ${port} on HOST 127.0.0.1: already in use`]);
    } finally {
      taken.close();
    }
  });

  it('release against an unreachable database: one line naming DATABASE_URL without its password', async () => {
    const { code, lines } = await exitOf(spawnBin('release', { ...base, LOG_LEVEL: 'fatal', DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/x' }));
    expect(code).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^migrations failed on DATABASE_URL=postgres:\/\/\*\*\*@127\.0\.0\.1:1\/x: .*ECONNREFUSED/)]);
  });

  it('the CLI: a configuration error or an unreachable database is one line on stderr and exit 1', async () => {
    const cli = (env: Record<string, string>) =>
      run(process.execPath, ['--import', 'tsx', 'src/bin/cli.ts', 'project', 'list'], { env: { ...process.env, ...base, ...env } }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
    const badConfig = await cli({ DATABASE_URL: path.join(dir, 'c.sqlite'), PORT: 'eighty' });
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toBe('Invalid configuration:\n  PORT: expected a whole number in decimal digits\n');
    const unreachable = await cli({ DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/x' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr.trim().split('\n')).toEqual([expect.stringMatching(/ECONNREFUSED 127\.0\.0\.1:1/)]);
  });
});

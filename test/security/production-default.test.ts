/**
 * Hostile environment, finding 12: NODE_ENV defaulted to development, with a published fallback
 * SECRETS_KEY and an open operator dashboard. Production is the default now; development mode is
 * asked for (`npm start` asks for it, so the README's two-command quick start still works) and
 * says so loudly at start.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { TEST_REDIS_URL } from '../helpers/app.js';
import { spawnBin } from '../helpers/spawn.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prod-default-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The environment of a new user's shell: no NODE_ENV, no SECRETS_KEY, nothing of the test run's. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['NODE_ENV', 'SECRETS_KEY', 'ADMIN_USERNAME', 'ADMIN_PASSWORD', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID']) delete env[k];
  return { ...env, ...extra };
}

describe('production by default', () => {
  it('config without NODE_ENV is production and refuses to run without SECRETS_KEY', () => {
    expect(() => loadConfig({})).toThrow(/SECRETS_KEY/);
    expect(loadConfig({ SECRETS_KEY: 'ab'.repeat(32) }).NODE_ENV).toBe('production');
  });

  it('a process started without NODE_ENV or SECRETS_KEY exits non-zero, saying what to set', async () => {
    const proc = spawnBin('web', { NODE_ENV: 'production', PORT: '0', DATABASE_URL: path.join(dir, 'p.sqlite'), REDIS_URL: TEST_REDIS_URL });
    expect(await proc.exited).not.toBe(0);
    expect(proc.output()).toMatch(/SECRETS_KEY: required in production.*NODE_ENV=development/);
  });

  it('`npm start` (the quick start) runs in development mode and says so loudly', async () => {
    const child = spawn('npm', ['start', '--silent'], {
      cwd: process.cwd(),
      env: cleanEnv({ PORT: '0', DATABASE_URL: path.join(dir, 'data', 'a.sqlite'), REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `pd-${process.pid}`, LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const started = Date.now();
      while (!/ready on/.test(out) && child.exitCode === null && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(/ready on http:\/\/localhost:\d+/);
      expect(out).toMatch(/DEVELOPMENT MODE \(NODE_ENV=development\)/);
      expect(out).toMatch(/PUBLISHED development SECRETS_KEY/);
      expect(out).toMatch(/operator dashboard and \/metrics are OPEN/);
    } finally {
      // npm → sh → node: end the whole group this test started.
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});

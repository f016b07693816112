import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/accounts/authenticator.js';
import { TEST_SECRETS_KEY } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

const run = promisify(execFile);

async function cli(url: string, ...args: string[]) {
  return run('node', ['--import', 'tsx', 'src/bin/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY, LOG_LEVEL: 'silent' },
  });
}

describe.each(dbKinds())('bootstrap CLI on %s', (kind) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb(kind);
  });
  afterAll(async () => t.destroy());

  it('creates a project and a service account, printing exactly one JSON object each', async () => {
    const created = await cli(t.url, 'project', 'create', '--name', 'Shop', '--residency', 'EU', '--json');
    const project = JSON.parse(created.stdout);
    expect(created.stdout.trim().split('\n')).toHaveLength(1);
    expect(Object.keys(project).sort()).toEqual(['api_secret', 'id', 'id_merge', 'name', 'residency', 'token', 'workspace_id']);
    expect(project).toMatchObject({ name: 'Shop', residency: 'EU', id_merge: 'simplified' });
    expect(project.token).toMatch(/^[0-9a-f]{32}$/);

    const sa = JSON.parse((await cli(t.url, 'service-account', 'create', '--username', 'etl', '--project', String(project.id), '--role', 'admin', '--json')).stdout);
    expect(Object.keys(sa).sort()).toEqual(['secret', 'username']);

    // The secret works, and is stored only as a hash.
    const auth = new Authenticator(t.db);
    const principal = await auth.authenticate({ username: 'etl', password: sa.secret });
    expect(principal?.kind).toBe('service_account');
    expect(await auth.authenticate({ username: 'etl', password: `${sa.secret}x` })).toBeUndefined();
    const row = await t.db('service_accounts').where({ username: 'etl' }).first();
    expect(row.secret_hash).toMatch(/^scrypt\$/);
    expect(row.secret_hash).not.toContain(sa.secret);
    // The project secret authenticates as the project (Basic username, empty password).
    const bySecret = await auth.authenticate({ username: project.api_secret, password: '' });
    expect(bySecret).toMatchObject({ kind: 'project_secret', project: { id: project.id } });

    const listed = JSON.parse((await cli(t.url, 'service-account', 'list', '--json')).stdout);
    expect(listed.service_accounts).toEqual([{ username: 'etl', roles: [{ project_id: project.id, role: 'admin' }] }]);
    await cli(t.url, 'service-account', 'grant', '--username', 'etl', '--project', String(project.id), '--role', 'analyst');
    const relisted = JSON.parse((await cli(t.url, 'service-account', 'list', '--json')).stdout);
    expect(relisted.service_accounts[0].roles[0].role).toBe('analyst');

    const projects = JSON.parse((await cli(t.url, 'project', 'list', '--json')).stdout);
    expect(projects.projects.map((p: { id: number }) => p.id)).toContain(project.id);
  });

  it('rejects bad arguments with a usage message and a non-zero exit', async () => {
    await expect(cli(t.url, 'project', 'create', '--json')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('missing --name') });
    await expect(cli(t.url, 'project', 'create', '--name', 'x', '--residency', 'MARS')).rejects.toMatchObject({ code: 2 });
    await expect(
      cli(t.url, 'service-account', 'create', '--username', 'u', '--project', '999999', '--role', 'owner'),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('project 999999 not found') });
  });

  it('prints its usage on stdout and exits 0 when asked for help', async () => {
    for (const args of [['--help'], ['-h'], ['help'], ['project', 'create', '--help']]) {
      const out = await cli(t.url, ...args);
      expect(out.stdout).toMatch(/^usage:\n/);
      expect(out.stdout).toContain('cli events move');
      expect(out.stderr).toBe('');
    }
  });
});

/**
 * The 202 of POST /migrate/<tool> describes the migration as created — `queued`, as the contract
 * (§4) has it — even when a worker takes its first job before the answer is written (an audit
 * saw `running`). The enqueue here is where a real worker would start the run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markRunning, findMigration } from '../../src/db/migration-runs.repo.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createSecretBox, secretsKeyFrom } from '../../src/lib/secrets.js';
import { createMigration } from '../../src/migration/migration-create.service.js';
import type { JobQueues } from '../../src/queue/queues.js';
import { seedProject } from '../helpers/accounts.js';
import { testConfig } from '../helpers/app.js';
import { createTestDb, dbKinds, type TestDb } from '../helpers/db.js';

describe.each(dbKinds())('creating a migration on %s', (kind) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await createTestDb(kind);
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('answers the migration as created (queued) when a worker starts it before the answer', async () => {
    const p = await seedProject(t.db);
    const config = testConfig();
    const started: string[] = [];
    // A worker as fast as can be: the run is running by the time enqueue returns.
    const queues: Pick<JobQueues, 'enqueue'> = {
      enqueue: async (_name, payload) => {
        const { migrationId } = payload as { migrationId: string };
        await markRunning(t.db, migrationId, Date.now());
        started.push(migrationId);
        return migrationId;
      },
    };
    const body = { SOURCE_TOOL_API_KEY: 'k', SOURCE_TOOL_API_SECRET: 's', SERVICE_TOKEN: p.token, START_DATE: '2024-01-01', END_DATE: '2024-01-02' };
    const created = await createMigration({ db: t.db, config, secrets: createSecretBox(secretsKeyFrom(config.SECRETS_KEY)), queues, log: silentLogger }, 'amplitude', body);
    expect(created.status).toBe('queued');
    expect(started).toContain(created.id);
    expect((await findMigration(t.db, created.id))!.status).toBe('running');
  });
});

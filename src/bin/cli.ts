/**
 * Bootstrap CLI (`npm run cli -- …`) against the same DATABASE_URL as the service. With --json
 * it prints exactly one JSON object on stdout; errors go to stderr with exit code 1 (usage: 2);
 * `--help` prints the usage on stdout.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../../config/index.js';
import { createProject, createServiceAccount, grantServiceAccount } from '../accounts/accounts.service.js';
import { listProjects, listServiceAccounts } from '../db/accounts.repo.js';
import { createDb, type Db } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { isRole, ROLES } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';
import { silentLogger } from '../lib/logger.js';
import { runEventsMove } from './cli-events-move.js';

const USAGE = `usage:
  cli project create --name N [--residency US|EU|IN] [--id-merge simplified|original] [--json]
  cli project list [--json]
  cli service-account create --username U --project ID --role ${ROLES.join('|')} [--json]
  cli service-account grant --username U --project ID --role R [--json]
  cli service-account list [--json]
  cli events move --project ID --to STORE_URL [--from STORE_URL] [--to-cluster NAME --to-shard-urls URLS] [--json]
      (STORE_URL: clickhouse://user:password@host:8123/db, postgres://…, or a SQLite path)`;

class UsageError extends Error {}

function need(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`missing --${flag}`);
  return value;
}

function projectIdArg(value: string | undefined): number {
  const id = Number(need(value, 'project'));
  if (!Number.isSafeInteger(id) || id <= 0) throw new UsageError('--project must be a positive integer');
  return id;
}

function roleArg(value: string | undefined) {
  const role = need(value, 'role');
  if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return role;
}

export async function runCli(argv: string[], db: Db, config: Config): Promise<{ json: unknown; text: string; exitCode?: number }> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      residency: { type: 'string' },
      'id-merge': { type: 'string' },
      username: { type: 'string' },
      project: { type: 'string' },
      role: { type: 'string' },
      to: { type: 'string' },
      from: { type: 'string' },
      'to-cluster': { type: 'string' },
      'to-shard-urls': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const command = positionals.join(' ');
  switch (command) {
    case 'project create': {
      const residency = values.residency ?? 'US';
      if (!['US', 'EU', 'IN'].includes(residency)) throw new UsageError('--residency must be US, EU or IN');
      const idMerge = values['id-merge'] ?? 'simplified';
      if (!['simplified', 'original'].includes(idMerge)) throw new UsageError('--id-merge must be simplified or original');
      const p = await createProject(db, {
        name: need(values.name, 'name'),
        residency: residency as 'US' | 'EU' | 'IN',
        idMerge: idMerge as 'simplified' | 'original',
      });
      return { json: p, text: `project ${p.id} created\n  token: ${p.token}\n  api_secret: ${p.api_secret} (shown once)\n  workspace: ${p.workspace_id}` };
    }
    case 'project list': {
      const projects = (await listProjects(db)).map((p) => ({
        id: p.id,
        name: p.name,
        token: p.token,
        workspace_id: p.workspaceId,
        residency: p.residency,
        id_merge: p.idMerge,
      }));
      return { json: { projects }, text: projects.map((p) => `${p.id}\t${p.name}\t${p.residency}\t${p.id_merge}`).join('\n') };
    }
    case 'service-account create': {
      const sa = await createServiceAccount(db, {
        username: need(values.username, 'username'),
        projectId: projectIdArg(values.project),
        role: roleArg(values.role),
      });
      return { json: sa, text: `service account ${sa.username} created\n  secret: ${sa.secret} (shown once)` };
    }
    case 'service-account grant': {
      const input = { username: need(values.username, 'username'), projectId: projectIdArg(values.project), role: roleArg(values.role) };
      await grantServiceAccount(db, input);
      return { json: { username: input.username, project_id: input.projectId, role: input.role }, text: 'granted' };
    }
    case 'service-account list': {
      const accounts = await listServiceAccounts(db);
      return {
        json: { service_accounts: accounts },
        text: accounts.map((a) => `${a.username}\t${a.roles.map((r) => `${r.project_id}:${r.role}`).join(',')}`).join('\n'),
      };
    }
    case 'events move': {
      const result = await runEventsMove(
        {
          projectId: projectIdArg(values.project),
          to: need(values.to, 'to'),
          from: values.from,
          toCluster: values['to-cluster'],
          toShardUrls: values['to-shard-urls'],
        },
        config,
        db,
      );
      const counts = `source ${result.source_count}, destination ${result.destination_count}`;
      return {
        json: result,
        text: `project ${result.project_id}: ${result.read} events read, ${result.written} new in the destination; ${counts}${result.verified ? '' : ' — NOT VERIFIED'}`,
        // Counts that differ fail the command (the JSON still says what was found).
        exitCode: result.verified ? 0 : 1,
      };
    }
    default:
      throw new UsageError(command ? `unknown command '${command}'` : 'no command given');
  }
}

/** `help` as the command, or `--help`/`-h` anywhere: the usage on stdout and success, no database opened. */
function wantsHelp(argv: string[]): boolean {
  return argv[0] === 'help' || argv.includes('--help') || argv.includes('-h');
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (wantsHelp(argv)) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    // A bad variable is the operator's to fix: its message, not a stack.
    process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
    return 1;
  }
  // knex's own warnings (a refused connect, with its stack) would print to the console; the
  // failure they belong to reaches the catch below and is reported there in one line.
  const db = createDb(config, { log: silentLogger });
  try {
    await migrateLatest(db);
    const { json, text, exitCode } = await runCli(argv, db, config);
    process.stdout.write(argv.includes('--json') ? `${JSON.stringify(json)}\n` : `${text}\n`);
    return exitCode ?? 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`${err instanceof ValidationError ? err.message : String(err)}\n`);
    return 1;
  } finally {
    await db.destroy();
  }
}

main().then((code) => process.exit(code));

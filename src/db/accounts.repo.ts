/** Projects, workspaces, service accounts and their per-project roles. */
import type { Role } from '../domain/roles.js';
import { MAX_ROW_ID } from '../domain/row-id.js';
import { toNumber, type DbOrTrx } from './knex.js';

export type Residency = 'US' | 'EU' | 'IN';
export type IdMerge = 'simplified' | 'original';

export interface Project {
  id: number;
  name: string;
  token: string;
  residency: Residency;
  idMerge: IdMerge;
}

export interface ServiceAccount {
  id: number;
  username: string;
  secretHash: string;
  email: string | null;
}

function toProject(r: Record<string, unknown>): Project {
  return {
    id: toNumber(r.id),
    name: r.name as string,
    token: r.token as string,
    residency: r.residency as Residency,
    idMerge: r.id_merge as IdMerge,
  };
}

export async function insertProject(
  db: DbOrTrx,
  p: { name: string; token: string; apiSecretHash: string; residency: Residency; idMerge: IdMerge; now: number },
): Promise<{ project: Project; workspaceId: number }> {
  const [row] = await db('projects')
    .insert({
      name: p.name,
      token: p.token,
      api_secret_hash: p.apiSecretHash,
      residency: p.residency,
      id_merge: p.idMerge,
      created_at: p.now,
    })
    .returning('*');
  const project = toProject(row);
  const [ws] = await db('workspaces')
    .insert({ project_id: project.id, name: 'Default', is_default: true })
    .returning('id');
  return { project, workspaceId: toNumber(typeof ws === 'object' ? ws.id : ws) };
}

export async function listProjects(db: DbOrTrx): Promise<(Project & { workspaceId: number | null })[]> {
  const rows = await db('projects')
    .leftJoin('workspaces', function () {
      this.on('workspaces.project_id', '=', 'projects.id').andOn('workspaces.is_default', '=', db.raw('?', [true]));
    })
    .select('projects.*', 'workspaces.id as workspace_id')
    .orderBy('projects.id');
  return rows.map((r) => ({ ...toProject(r), workspaceId: r.workspace_id === null ? null : toNumber(r.workspace_id) }));
}

export async function findProjectById(db: DbOrTrx, id: number): Promise<Project | undefined> {
  if (id > MAX_ROW_ID) return undefined;
  const row = await db('projects').where({ id }).first();
  return row ? toProject(row) : undefined;
}

/**
 * A NUL is in no stored token or username, and PostgreSQL refuses it as a text parameter (which
 * turned a hostile token or Basic username into a 500): such a lookup finds nothing, on every database.
 */
const holdsNul = (s: string) => s.includes('\u0000');

export async function findProjectByToken(db: DbOrTrx, token: string): Promise<Project | undefined> {
  if (holdsNul(token)) return undefined;
  const row = await db('projects').where({ token }).first();
  return row ? toProject(row) : undefined;
}

export async function findProjectBySecretHash(db: DbOrTrx, hash: string): Promise<Project | undefined> {
  const row = await db('projects').where({ api_secret_hash: hash }).first();
  return row ? toProject(row) : undefined;
}

export async function findWorkspace(db: DbOrTrx, id: number): Promise<{ id: number; projectId: number } | undefined> {
  if (id > MAX_ROW_ID) return undefined;
  const row = await db('workspaces').where({ id }).first();
  return row ? { id: toNumber(row.id), projectId: toNumber(row.project_id) } : undefined;
}

export async function insertServiceAccount(
  db: DbOrTrx,
  a: { username: string; secretHash: string; email?: string; now: number },
): Promise<ServiceAccount> {
  const [row] = await db('service_accounts')
    .insert({ username: a.username, secret_hash: a.secretHash, email: a.email ?? null, created_at: a.now })
    .returning('*');
  return { id: toNumber(row.id), username: row.username, secretHash: row.secret_hash, email: row.email };
}

export async function findServiceAccount(db: DbOrTrx, username: string): Promise<ServiceAccount | undefined> {
  if (holdsNul(username)) return undefined;
  const row = await db('service_accounts').where({ username }).first();
  return row ? { id: toNumber(row.id), username: row.username, secretHash: row.secret_hash, email: row.email } : undefined;
}

export async function grantRole(db: DbOrTrx, serviceAccountId: number, projectId: number, role: Role): Promise<void> {
  await db('service_account_roles')
    .insert({ service_account_id: serviceAccountId, project_id: projectId, role })
    .onConflict(['service_account_id', 'project_id'])
    .merge({ role });
}

export async function roleIn(db: DbOrTrx, serviceAccountId: number, projectId: number): Promise<Role | undefined> {
  const row = await db('service_account_roles').where({ service_account_id: serviceAccountId, project_id: projectId }).first();
  return row?.role as Role | undefined;
}

export async function listServiceAccounts(
  db: DbOrTrx,
): Promise<{ username: string; roles: { project_id: number; role: Role }[] }[]> {
  const accounts = await db('service_accounts').select('id', 'username').orderBy('id');
  const roles = await db('service_account_roles').select('service_account_id', 'project_id', 'role');
  return accounts.map((a) => ({
    username: a.username,
    roles: roles
      .filter((r) => toNumber(r.service_account_id) === toNumber(a.id))
      .map((r) => ({ project_id: toNumber(r.project_id), role: r.role as Role })),
  }));
}

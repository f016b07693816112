/** Creating projects and service accounts: random credentials, stored only as hashes. */
import {
  findProjectById,
  findServiceAccount,
  grantRole,
  insertProject,
  insertServiceAccount,
  type IdMerge,
  type Residency,
} from '../db/accounts.repo.js';
import type { Db } from '../db/knex.js';
import type { Role } from '../domain/roles.js';
import { ValidationError } from '../lib/errors.js';
import { hashSecret, randomToken, sha256Hex } from '../lib/secrets.js';

export interface CreatedProject {
  id: number;
  name: string;
  token: string;
  api_secret: string;
  workspace_id: number;
  residency: Residency;
  id_merge: IdMerge;
}

export async function createProject(
  db: Db,
  input: { name: string; residency?: Residency; idMerge?: IdMerge },
): Promise<CreatedProject> {
  const token = randomToken(16);
  const apiSecret = randomToken(16);
  const residency = input.residency ?? 'US';
  const idMerge = input.idMerge ?? 'simplified';
  const { project, workspaceId } = await db.transaction((trx) =>
    insertProject(trx, { name: input.name, token, apiSecretHash: sha256Hex(apiSecret), residency, idMerge, now: Date.now() }),
  );
  return { id: project.id, name: project.name, token, api_secret: apiSecret, workspace_id: workspaceId, residency, id_merge: idMerge };
}

export async function createServiceAccount(
  db: Db,
  input: { username: string; projectId: number; role: Role; email?: string },
): Promise<{ username: string; secret: string }> {
  if (!(await findProjectById(db, input.projectId))) throw new ValidationError(404, `project ${input.projectId} not found`);
  if (await findServiceAccount(db, input.username)) throw new ValidationError(409, `service account '${input.username}' already exists`);
  const secret = randomToken(24);
  const secretHash = await hashSecret(secret);
  await db.transaction(async (trx) => {
    const account = await insertServiceAccount(trx, { username: input.username, secretHash, email: input.email, now: Date.now() });
    await grantRole(trx, account.id, input.projectId, input.role);
  });
  return { username: input.username, secret };
}

export async function grantServiceAccount(db: Db, input: { username: string; projectId: number; role: Role }): Promise<void> {
  const account = await findServiceAccount(db, input.username);
  if (!account) throw new ValidationError(404, `service account '${input.username}' not found`);
  if (!(await findProjectById(db, input.projectId))) throw new ValidationError(404, `project ${input.projectId} not found`);
  await grantRole(db, account.id, input.projectId, input.role);
}

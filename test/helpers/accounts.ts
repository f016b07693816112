import { createProject, createServiceAccount, type CreatedProject } from '../../src/accounts/accounts.service.js';
import type { Db } from '../../src/db/knex.js';
import type { Role } from '../../src/domain/roles.js';

export interface SeededProject extends CreatedProject {
  /** Basic credentials of a service account with `role` on this project. */
  sa: { username: string; secret: string };
  basic: string;
}

let counter = 0;

export async function seedProject(
  db: Db,
  options: { role?: Role; name?: string; residency?: 'US' | 'EU' | 'IN'; idMerge?: 'simplified' | 'original' } = {},
): Promise<SeededProject> {
  counter += 1;
  const project = await createProject(db, {
    name: options.name ?? `project ${counter}`,
    residency: options.residency,
    idMerge: options.idMerge,
  });
  const sa = await createServiceAccount(db, {
    username: `sa-${project.id}-${counter}-${Math.random().toString(36).slice(2, 8)}`,
    projectId: project.id,
    role: options.role ?? 'owner',
  });
  return { ...project, sa, basic: basicAuth(sa.username, sa.secret) };
}

export function basicAuth(username: string, password = ''): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

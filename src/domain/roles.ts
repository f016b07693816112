/** A service account's role in one project, most powerful first. */
export const ROLES = ['owner', 'admin', 'analyst', 'consumer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Who may write data into a project (/import, syncs, migrations, batch imports). */
export function canWriteData(role: Role): boolean {
  return role === 'owner' || role === 'admin';
}

/** Who may read a project's data back (export, engage, insights). */
export function canReadData(role: Role): boolean {
  return ROLES.includes(role);
}

/** A service account's role in one project, most powerful first. */
export const ROLES = ['owner', 'admin', 'analyst', 'consumer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Who may read a project's data back (export, engage, insights). */
export function canReadData(role: Role): boolean {
  return ROLES.includes(role);
}

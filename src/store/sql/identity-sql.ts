/** Identity lookups over `identity_links` (see event-store.ts for the rules). */
import type { DbOrTrx } from '../../db/knex.js';
import { deviceOfDistinctId } from '../../domain/identity.js';
import type { Identity } from '../event-store.js';

/** Device ids per lookup: under SQLite's and PostgreSQL's bound-parameter limits. */
const DEVICE_CHUNK = 500;

export async function usersOfDevicesSql(db: DbOrTrx, projectId: number, deviceIds: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const unique = [...new Set(deviceIds)];
  for (let i = 0; i < unique.length; i += DEVICE_CHUNK) {
    const rows = await db('identity_links')
      .where({ project_id: projectId })
      .whereIn('device_id', unique.slice(i, i + DEVICE_CHUNK))
      .select('device_id', 'user_id');
    for (const r of rows) out.set(r.device_id as string, r.user_id as string);
  }
  return out;
}

async function userOfDevice(db: DbOrTrx, projectId: number, deviceId: string): Promise<string | undefined> {
  return (await usersOfDevicesSql(db, projectId, [deviceId])).get(deviceId);
}

async function devicesOf(db: DbOrTrx, projectId: number, userId: string): Promise<string[]> {
  const rows = await db('identity_links').where({ project_id: projectId, user_id: userId }).orderBy('device_id').select('device_id');
  return rows.map((r) => r.device_id as string);
}

export async function identityOfSql(db: DbOrTrx, projectId: number, distinctId: string): Promise<Identity> {
  const device = deviceOfDistinctId(distinctId);
  if (device !== undefined) {
    const user = await userOfDevice(db, projectId, device);
    return user === undefined ? { userId: null, deviceIds: [device] } : { userId: user, deviceIds: await devicesOf(db, projectId, user) };
  }
  const user = (await userOfDevice(db, projectId, distinctId)) ?? distinctId;
  return { userId: user, deviceIds: await devicesOf(db, projectId, user) };
}

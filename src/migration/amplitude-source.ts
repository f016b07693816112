/**
 * A migration's view of its Amplitude project: the export client configured from the run (the
 * sealed credentials opened only here, in memory, for the length of a job) and window fetches
 * that reuse an archive already on disk.
 */
import fs from 'node:fs';
import { downloadExport, windowOf, type ExportClientOptions, type ExportOutcome } from '../../connectors/amplitude/export-client.js';
import type { MigrationRow } from '../db/migration-runs.repo.js';
import { PermanentError } from '../lib/errors.js';
import { archivePath } from './archive-files.js';
import type { MigrationRunContext } from '../runs/context.js';

export interface SealedCredentials {
  apiKey: string;
  apiSecret: string;
}

export function exportClientFor(m: MigrationRow, ctx: Pick<MigrationRunContext, 'config' | 'secrets' | 'log'>): ExportClientOptions {
  let credentials: SealedCredentials;
  try {
    credentials = JSON.parse(ctx.secrets.open(m.credentials)) as SealedCredentials;
  } catch {
    // A SECRETS_KEY change makes stored credentials unreadable; no retry can fix that.
    throw new PermanentError('the stored source credentials cannot be decrypted (was SECRETS_KEY changed?); post the migration again');
  }
  const baseUrl = m.sourceRegion === 'EU' ? ctx.config.AMPLITUDE_EU_URL : ctx.config.AMPLITUDE_US_URL;
  return {
    baseUrl,
    credentials,
    retry: { retries: ctx.config.MIGRATION_HTTP_RETRIES, baseMs: ctx.config.MIGRATION_RETRY_BASE_MS, maxMs: 60_000 },
    log: ctx.log,
  };
}

/** Window key 'day' or an hour '00'…'23'. */
export function hourOfKey(key: string): number | undefined {
  return key === 'day' ? undefined : Number(key);
}

/** The window's archive: from disk when a previous pass left it there, else downloaded. */
export async function fetchWindow(
  m: MigrationRow,
  day: string,
  key: string,
  client: ExportClientOptions,
  ctx: Pick<MigrationRunContext, 'config' | 'signal'>,
): Promise<ExportOutcome> {
  const dest = archivePath(ctx.config.MIGRATION_TMP_DIR, m.id, day, key);
  // Files appear only by rename after a complete download, so an existing one is whole.
  if (fs.existsSync(dest)) return { kind: 'archive', path: dest, bytes: fs.statSync(dest).size };
  return downloadExport(windowOf(day, hourOfKey(key)), dest, client, ctx.signal);
}

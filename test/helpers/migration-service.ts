/**
 * The migration service as a user drives it over HTTP (`POST /migrate/amplitude`,
 * `GET /migrate/migrations/{id}`) against the Amplitude stand-in, and what a migration of a
 * stand-in dataset must store — for the end-to-end tests with real worker processes.
 */
import { transformAmplitudeEvent } from '../../src/domain/amplitude-transform.js';
import type { AmplitudeDataset } from '../amplitude-standin/dataset.js';
import { basicAuth, type SeededProject } from './accounts.js';
import { until } from './job-platform.js';

/** The Amplitude project's key and secret the stand-in accepts (startAmplitudeStandin's apiKey / apiSecret). */
export const AMPLITUDE_CREDENTIALS = { apiKey: 'amp-key', apiSecret: 'amp-secret' } as const;

/** Posts a migration into the project (`fields`: dates, DRY_RUN, …); returns its id, or throws with the answer. */
export async function postMigration(appUrl: string, p: SeededProject, fields: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${appUrl}/migrate/amplitude`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ AMPLITUDE_API_KEY: AMPLITUDE_CREDENTIALS.apiKey, AMPLITUDE_API_SECRET: AMPLITUDE_CREDENTIALS.apiSecret, MIXPANEL_TOKEN: p.token, ...fields }),
  });
  if (res.status !== 202) throw new Error(`POST /migrate/amplitude: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { results: { migration_id: string } }).results.migration_id;
}

/** The migration's view with its days, as its project's token sees it. */
export async function migrationView(appUrl: string, p: SeededProject, id: string): Promise<Record<string, any>> {
  const res = await fetch(`${appUrl}/migrate/migrations/${id}`, { headers: { authorization: basicAuth(p.token) } });
  return ((await res.json()) as { results: Record<string, any> }).results;
}

/** Polls the view until the migration has succeeded or failed; returns that view. */
export function waitForMigration(appUrl: string, p: SeededProject, id: string, timeoutMs: number): Promise<Record<string, any>> {
  return until(
    async () => {
      const v = await migrationView(appUrl, p, id);
      return v.status === 'succeeded' || v.status === 'failed' ? v : undefined;
    },
    timeoutMs,
    250,
  );
}

/** The insert ids a migration of the whole dataset stores: Amplitude's own where valid, else the transform's derived one. */
export function datasetInsertIds(dataset: AmplitudeDataset): Set<string> {
  const ids = new Set<string>();
  for (const day of dataset.days()) {
    for (const record of dataset.eventsForDay(day)) {
      const out = transformAmplitudeEvent(record, { migrationId: 'any' });
      if (!out.ok) throw new Error(`the dataset holds a record the transform refuses: ${out.message}`);
      ids.add(out.record.properties.$insert_id);
    }
  }
  return ids;
}

/**
 * The count pass of one day: download the day's export (or its 24 hours when Amplitude says the
 * day is too large), count the records, keep the archives on disk for the load pass. The result
 * is written in one update at the end, so a crash mid-count simply counts the day again (reusing
 * any archive already downloaded): the count is exact either way.
 */
import { countArchiveRecords } from '../../connectors/amplitude/archive-reader.js';
import { appendLog, findDay, updateDay, type DayWindow, type MigrationRow } from '../db/migration-runs.repo.js';
import { PermanentError } from '../lib/errors.js';
import { exportClientFor, fetchWindow } from './amplitude-source.js';
import type { MigrationRunContext } from '../runs/context.js';

const HOURS = Array.from({ length: 24 }, (_, h) => String(h).padStart(2, '0'));

export async function countDay(ctx: MigrationRunContext, m: MigrationRow, day: string): Promise<void> {
  const row = await findDay(ctx.db, m.id, day);
  if (!row || row.status !== 'queued' && row.status !== 'counting') return;
  await updateDay(ctx.db, m.id, day, { status: 'counting', error: null, now: Date.now() });
  await ctx.progress({ percent: 0, day });
  const client = exportClientFor(m, ctx);

  const windows: DayWindow[] = [];
  const countWindow = async (key: string): Promise<'too-large' | undefined> => {
    const outcome = await fetchWindow(m, day, key, client, ctx);
    if (outcome.kind === 'too-large') return 'too-large';
    if (outcome.kind === 'no-data') {
      windows.push({ key, kind: 'no-data', events: 0 });
      return undefined;
    }
    const { records } = await countArchiveRecords(outcome.path, ctx.signal);
    windows.push({ key, kind: 'archive', events: records });
    return undefined;
  };

  if ((await countWindow('day')) === 'too-large') {
    const line = `${day}: Amplitude says the day is too large for one export; fetching it hour by hour`;
    await ctx.logLine(line);
    await appendLog(ctx.db, m.id, line, Date.now());
    for (const hour of HOURS) {
      if ((await countWindow(hour)) === 'too-large') {
        throw new PermanentError(
          `the hour ${day} ${hour}:00 UTC alone is over Amplitude's 4 GB export limit; this service cannot export it (Amplitude's S3 export can)`,
        );
      }
    }
  }
  const events = windows.reduce((s, w) => s + w.events, 0);
  await updateDay(ctx.db, m.id, day, { status: 'counted', windows, eventsCounted: events, now: Date.now() });
  await ctx.progress({ percent: 100, day, events_counted: events });
  await ctx.logLine(`${day}: ${events} records in ${windows.filter((w) => w.kind === 'archive').length} archive(s)`);
}

/**
 * The load pass of one day: each window's archive is decoded from the checkpoint on (on a
 * decoder thread, window-decoder.ts), and every batch is committed in ONE transaction together
 * with its staged user properties, the new checkpoint and the day's counts. A crash loses at most
 * the batch in flight, which the next attempt reads again from the checkpoint; and since events
 * dedupe on their keys, even a stale checkpoint could not double anything — the checkpoint saves
 * work, and keeps the counts exact because they move in the same transaction as the rows.
 *
 * Fencing: each commit expects the day's `seq` it started from; a second copy of the job (after
 * a lost lock) finds it moved, rolls back and stops.
 */
import {
  findDay,
  findMigration,
  recordBatch,
  REJECTION_SAMPLE,
  updateDay,
  type DayCheckpoint,
  type DayRow,
  type DayWindow,
  type MigrationRow,
} from '../db/migration-runs.repo.js';
import { stageUsers } from '../db/migration-user-props.repo.js';
import { storeEventRows } from '../ingest/events.ingest.js';
import { writeThenRecord } from '../store/write-then-record.js';
import { PermanentError, RetryableError } from '../lib/errors.js';
import { exportClientFor, fetchWindow } from './amplitude-source.js';
import { removeArchive } from './archive-files.js';
import { decodeWindowOffThread } from './decoder-threads.js';
import type { MigrationRunContext } from '../runs/context.js';
import type { DecodedBatch } from './window-decoder.js';

/** How often (in commits) a load re-reads the run to notice it was failed elsewhere. */
const STATUS_CHECK_EVERY = 10;

export type LoadOutcome = 'done' | 'stopped';

class DayLoader {
  private readonly checkpoint: DayCheckpoint;
  private seq: number;
  private readTotal: number;
  private loadedTotal: number;
  private samplesKept: number;
  private commits = 0;

  constructor(
    private readonly ctx: MigrationRunContext,
    private readonly m: MigrationRow,
    private readonly day: DayRow,
  ) {
    this.checkpoint = day.checkpoint ?? { windowsDone: [], entriesDone: [] };
    this.seq = day.seq;
    this.readTotal = day.eventsRead;
    this.loadedTotal = day.eventsLoaded;
    this.samplesKept = day.rejections.length;
  }

  async run(): Promise<LoadOutcome> {
    for (const w of this.day.windows ?? []) {
      if (this.checkpoint.windowsDone.includes(w.key)) continue;
      if (w.kind === 'no-data') {
        this.checkpoint.windowsDone.push(w.key);
        continue;
      }
      if ((await this.loadWindow(w)) === 'stopped') return 'stopped';
    }
    await updateDay(this.ctx.db, this.m.id, this.day.day, { status: 'done', checkpoint: this.checkpoint, now: Date.now() });
    return 'done';
  }

  private async loadWindow(w: DayWindow): Promise<LoadOutcome> {
    const { ctx, m } = this;
    const outcome = await fetchWindow(m, this.day.day, w.key, exportClientFor(m, ctx), ctx);
    if (outcome.kind === 'too-large') throw new PermanentError(`${this.day.day} window ${w.key} became too large to export since it was counted`);
    if (outcome.kind === 'no-data') {
      // Gone since the count pass: nothing to load.
      this.checkpoint.windowsDone.push(w.key);
      return 'done';
    }
    const cp = this.checkpoint;
    const req = {
      file: outcome.path,
      migrationId: m.id,
      entriesDone: cp.entriesDone,
      entry: cp.entry,
      line: cp.line,
      batchEvents: ctx.config.MIGRATION_BATCH_EVENTS,
      // The same per-event limits as /import: migrated data obeys the rules of any other data.
      limits: { maxEventBytes: ctx.config.IMPORT_MAX_EVENT_BYTES, maxProperties: ctx.config.IMPORT_MAX_PROPERTIES, maxDepth: ctx.config.IMPORT_MAX_DEPTH },
    };
    for await (const batch of decodeWindowOffThread(req, ctx.signal, ctx.config.MIGRATION_DECODE_THREADS)) {
      cp.entriesDone = batch.entriesDone;
      if (batch.entry === undefined) delete cp.entry;
      else cp.entry = batch.entry;
      if (batch.line === undefined) delete cp.line;
      else cp.line = batch.line;
      if (batch.end) {
        cp.windowsDone.push(w.key);
        cp.entriesDone = [];
      }
      if ((await this.commit(batch)) === 'stopped') return 'stopped';
    }
    removeArchive(outcome.path);
    return 'done';
  }

  private async commit(batch: DecodedBatch): Promise<LoadOutcome> {
    const { ctx, m } = this;
    const now = Date.now();
    const samples = batch.samples.slice(0, Math.max(0, REJECTION_SAMPLE - this.samplesKept));
    const checkpoint = structuredClone(this.checkpoint);
    // Joined to the batch's transaction, or (ClickHouse) written just before it: store/write-then-record.ts.
    const stored = await writeThenRecord(ctx.db, ctx.events, (within) => storeEventRows(ctx.events, m.projectId, 'migration', batch.rows, now, within), async (trx, result) => {
      await stageUsers(trx, m.id, batch.staged);
      const current = await recordBatch(trx, m.id, this.day.day, {
        seq: this.seq,
        checkpoint,
        read: batch.read,
        loaded: result.imported,
        deduplicated: result.deduplicated,
        rejected: batch.rejected,
        rejections: samples,
        now,
      });
      if (!current) throw new RetryableError(`${this.day.day} was advanced by another copy of this job; this attempt stops`);
      return result;
    });
    this.seq += 1;
    this.samplesKept += samples.length;
    this.readTotal += batch.read;
    this.loadedTotal += stored.imported;
    this.commits += 1;

    const counted = this.day.eventsCounted ?? 0;
    await ctx.progress({
      percent: counted > 0 ? Math.min(100, Math.round((this.readTotal / counted) * 100)) : 100,
      day: this.day.day,
      events_read: this.readTotal,
      events_loaded: this.loadedTotal,
    });
    if (ctx.signal.aborted) throw new RetryableError('interrupted by shutdown; the day resumes from its checkpoint');
    if (this.commits % STATUS_CHECK_EVERY === 0) {
      const latest = await findMigration(ctx.db, m.id);
      if (!latest || latest.status === 'failed') return 'stopped';
    }
    return 'done';
  }
}

export async function loadDay(ctx: MigrationRunContext, m: MigrationRow, day: string): Promise<LoadOutcome> {
  const row = await findDay(ctx.db, m.id, day);
  if (!row || row.status === 'done') return 'done';
  if (row.status !== 'loading') await updateDay(ctx.db, m.id, day, { status: 'loading', error: null, now: Date.now() });
  const outcome = await new DayLoader(ctx, m, row).run();
  if (outcome === 'done') await ctx.logLine(`${day}: loaded (${row.eventsCounted ?? 0} records in the export)`);
  return outcome;
}

/**
 * The load pass of one day: read each window's archive from the checkpoint on, transform the
 * records, and commit every MIGRATION_BATCH_EVENTS of them in ONE transaction together with the
 * staged user properties and the new checkpoint and counts. A crash loses at most the batch in
 * flight, which the next attempt reads again from the checkpoint; and since events dedupe on
 * their keys, even a stale checkpoint could not double anything — the checkpoint only saves work,
 * and keeps the counts exact because they move in the same transaction as the rows they count.
 */
import { readArchiveLines } from '../../connectors/amplitude/archive-reader.js';
import type { ExportClientOptions } from '../../connectors/amplitude/export-client.js';
import { canonicalJson } from '../domain/canonical-json.js';
import { laterSnapshot, transformAmplitudeEvent, type AmplitudeUserSnapshot } from '../domain/amplitude-transform.js';
import {
  findDay,
  findMigration,
  recordBatch,
  updateDay,
  type DayCheckpoint,
  type DayRow,
  type DayWindow,
  type MigrationRow,
  type Rejection,
} from '../db/migration-runs.repo.js';
import { stageUsers } from '../db/migration-user-props.repo.js';
import { storeEvents, validateEvents } from '../ingest/events.ingest.js';
import { PermanentError, RetryableError } from '../lib/errors.js';
import { exportClientFor, fetchWindow } from './amplitude-source.js';
import { removeArchive } from './archive-files.js';
import type { MigrationRunContext } from './run-context.js';

/** How often (in commits) a load re-reads the run to notice it was failed elsewhere. */
const STATUS_CHECK_EVERY = 10;

export type LoadOutcome = 'done' | 'stopped';

class DayLoader {
  private records: unknown[] = [];
  private snapshots: (AmplitudeUserSnapshot | undefined)[] = [];
  private originEntry: string[] = [];
  private originLine: number[] = [];
  private read = 0;
  private rejectedEarly = 0;
  private samples: Rejection[] = [];
  private commits = 0;
  private readonly checkpoint: DayCheckpoint;
  private seq: number;
  private readTotal: number;
  private loadedTotal: number;
  private client: ExportClientOptions | undefined;

  constructor(
    private readonly ctx: MigrationRunContext,
    private readonly m: MigrationRow,
    private readonly day: DayRow,
  ) {
    this.checkpoint = day.checkpoint ?? { windowsDone: [], entriesDone: [] };
    this.seq = day.seq;
    this.readTotal = day.eventsRead;
    this.loadedTotal = day.eventsLoaded;
  }

  async run(): Promise<LoadOutcome> {
    for (const w of this.day.windows ?? []) {
      if (this.checkpoint.windowsDone.includes(w.key)) continue;
      if (w.kind === 'archive' && (await this.loadWindow(w)) === 'stopped') return 'stopped';
      this.checkpoint.windowsDone.push(w.key);
      this.checkpoint.entriesDone = [];
      delete this.checkpoint.entry;
      delete this.checkpoint.line;
    }
    await this.commit(true);
    return 'done';
  }

  private async loadWindow(w: DayWindow): Promise<LoadOutcome> {
    this.client ??= exportClientFor(this.m, this.ctx);
    const outcome = await fetchWindow(this.m, this.day.day, w.key, this.client, this.ctx);
    if (outcome.kind === 'no-data') return 'done'; // gone since the count pass: nothing to load
    if (outcome.kind === 'too-large') throw new PermanentError(`${this.day.day} window ${w.key} became too large to export since it was counted`);
    const cp = this.checkpoint;
    const from = { entriesDone: new Set(cp.entriesDone), entry: cp.entry, line: cp.line };
    for await (const batch of readArchiveLines(outcome.path, { from, batchLines: 1000, signal: this.ctx.signal })) {
      let line = batch.firstLine;
      for (const text of batch.lines) this.take(text, batch.entry, line++);
      if (batch.entryEnd) {
        cp.entriesDone.push(batch.entry);
        delete cp.entry;
        delete cp.line;
      } else {
        cp.entry = batch.entry;
        cp.line = line;
      }
      if (this.records.length + this.rejectedEarly >= this.ctx.config.MIGRATION_BATCH_EVENTS) {
        if ((await this.commit(false)) === 'stopped') return 'stopped';
      }
    }
    removeArchive(outcome.path);
    return 'done';
  }

  /** One record: parsed and transformed now, validated and stored at the next commit. */
  private take(text: string, entry: string, line: number): void {
    this.read += 1;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.reject(entry, line, 'line is not valid JSON');
      return;
    }
    const out = transformAmplitudeEvent(raw, { migrationId: this.m.id });
    if (!out.ok) {
      this.reject(entry, line, out.message);
      return;
    }
    this.records.push(out.record);
    this.snapshots.push(out.user);
    this.originEntry.push(entry);
    this.originLine.push(line);
  }

  private reject(entry: string, line: number, message: string): void {
    this.rejectedEarly += 1;
    if (this.samples.length < 20) this.samples.push({ entry, line, message });
  }

  private async commit(dayDone: boolean): Promise<LoadOutcome> {
    const { ctx, m } = this;
    const now = Date.now();
    // The same per-event limits as /import, so migrated data obeys the rules of any other data.
    const limits = { maxEventBytes: ctx.config.IMPORT_MAX_EVENT_BYTES, maxProperties: ctx.config.IMPORT_MAX_PROPERTIES, maxDepth: ctx.config.IMPORT_MAX_DEPTH };
    const { events, rejected } = validateEvents(this.records, { strict: false, now, limits });
    const rejectedIdx = new Set<number>();
    for (const r of rejected) {
      rejectedIdx.add(r.index);
      if (this.samples.length < 20) {
        this.samples.push({ entry: this.originEntry[r.index]!, line: this.originLine[r.index]!, message: `${r.field ? `${r.field}: ` : ''}${r.message}` });
      }
    }
    // Per user, the latest snapshot of this batch; across batches the staging table decides.
    const best = new Map<string, AmplitudeUserSnapshot>();
    this.snapshots.forEach((s, i) => {
      if (!s || rejectedIdx.has(i)) return;
      const prev = best.get(s.distinctId);
      best.set(s.distinctId, prev ? laterSnapshot(prev, s) : s);
    });
    const staged = [...best.values()].map((s) => ({ distinctId: s.distinctId, time: s.time, properties: canonicalJson(s.properties) }));
    const checkpoint: DayCheckpoint = structuredClone(this.checkpoint);
    const read = this.read;
    const rejectedCount = this.rejectedEarly + rejected.length;
    const samples = this.samples;

    const stored = await ctx.db.transaction(async (trx) => {
      const result = await storeEvents(trx, m.projectId, 'migration', events, now);
      await stageUsers(trx, m.id, staged);
      const current = await recordBatch(trx, m.id, this.day.day, {
        seq: this.seq,
        checkpoint,
        read,
        loaded: result.imported,
        deduplicated: result.deduplicated,
        rejected: rejectedCount,
        rejections: samples,
        now,
      });
      if (!current) throw new RetryableError(`${this.day.day} was advanced by another copy of this job; this attempt stops`);
      if (dayDone) await updateDay(trx, m.id, this.day.day, { status: 'done', now });
      return result;
    });

    this.seq += 1;
    this.readTotal += read;
    this.loadedTotal += stored.imported;
    this.records = [];
    this.snapshots = [];
    this.originEntry = [];
    this.originLine = [];
    this.read = 0;
    this.rejectedEarly = 0;
    this.samples = [];
    this.commits += 1;

    const counted = this.day.eventsCounted ?? 0;
    await ctx.progress({
      percent: counted > 0 ? Math.min(100, Math.round((this.readTotal / counted) * 100)) : 100,
      day: this.day.day,
      events_read: this.readTotal,
      events_loaded: this.loadedTotal,
    });
    if (dayDone) return 'done';
    if (ctx.signal.aborted) throw new RetryableError('interrupted by shutdown; the day resumes from its checkpoint');
    if (this.commits % STATUS_CHECK_EVERY === 0) {
      const now2 = await findMigration(ctx.db, m.id);
      if (!now2 || now2.status === 'failed') return 'stopped';
    }
    return 'done';
  }
}

export async function loadDay(ctx: MigrationRunContext, m: MigrationRow, day: string): Promise<LoadOutcome> {
  const row = await findDay(ctx.db, m.id, day);
  if (!row || row.status === 'done') return 'done';
  if (row.status !== 'loading') await updateDay(ctx.db, m.id, day, { status: 'loading', error: null, now: Date.now() });
  const outcome = await new DayLoader(ctx, m, row).run();
  if (outcome === 'done') {
    const counted = row.eventsCounted ?? 0;
    await ctx.logLine(`${day}: loaded (${counted} records in the export)`);
  }
  return outcome;
}

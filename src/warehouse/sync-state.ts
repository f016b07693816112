/**
 * The in-memory view of one attempt of a sync run: counts, checkpoint and bounded log. Changes
 * are staged per batch and only adopted once the batch's transaction committed, so a rolled-back
 * batch leaves the view exactly as SQL has it.
 */
import { COUNT_FIELDS, ZERO_COUNTS, type Counts, type SyncCheckpoint, type SyncRun } from '../db/sync-runs.repo.js';
import { appendLog, logLine } from '../domain/sync-log.js';
import { compareWatermarks, watermarkValue } from '../domain/warehouse-values.js';

/** Rejected rows shown in the run log, per run. */
export const REJECT_SAMPLES = 20;

export type { Counts };

/** What a read restarted from its first row keeps of its counts (see StagedBatch.restart). */
export type RestartKind = 'mirror' | 'events' | 'profiles';

/**
 * The import's watermark after a run that succeeded with `checkpoint`, or undefined to leave it:
 * time_based — the greatest insert time read, when past the current one; mirror — the change
 * point the run took before reading (where the next run's changes start).
 */
export function nextWatermark(imp: { definition: { sync_mode: string }; watermark: string | number | null }, checkpoint: Pick<SyncCheckpoint, 'maxInsertTime' | 'changePoint'>): string | number | undefined {
  if (imp.definition.sync_mode === 'mirror') return checkpoint.changePoint;
  const max = checkpoint.maxInsertTime;
  if (imp.definition.sync_mode !== 'time_based' || max === undefined) return undefined;
  return imp.watermark === null || compareWatermarks(max, imp.watermark) > 0 ? max : undefined;
}

/**
 * The closing line of a run, or of one partition of it: what it read and what it did with it (a
 * mirror also says what changed; only a whole run can say the table did not change).
 */
export function outcomeLine(c: Counts, mirror: boolean, of: { partitions?: number; partition?: boolean } = {}): string {
  const read = `${c.rowsRead} rows read${of.partitions ? ` in ${of.partitions} partitions` : ''}`;
  if (!mirror) return `succeeded: ${read}, ${c.numImported} imported, ${c.numDeduplicated} duplicates, ${c.rowsSkipped} rejected`;
  const duplicates = c.numDeduplicated > 0 ? `, ${c.numDeduplicated} duplicates of other sources' events` : '';
  const line = `succeeded: ${read}, ${c.numImported} inserted, ${c.numUpdated} updated, ${c.numDeleted} deleted${duplicates}, ${c.rowsSkipped} rejected`;
  const unchanged = !of.partition && c.numImported + c.numUpdated + c.numDeleted === 0;
  return unchanged ? `${line}; the table is unchanged since the last run, so nothing changed` : line;
}

export class SyncState {
  counts: Counts;
  checkpoint: SyncCheckpoint;
  log: string[];
  rowsTotal: number | null;

  constructor(run: Pick<SyncRun, keyof Counts | 'rowsTotal'>, checkpoint: SyncCheckpoint, log: string[]) {
    this.counts = Object.fromEntries(COUNT_FIELDS.map((f) => [f, run[f]])) as unknown as Counts;
    this.checkpoint = checkpoint;
    this.log = log;
    this.rowsTotal = run.rowsTotal;
  }

  get offset(): number {
    return this.checkpoint.offset;
  }

  /** Adds lines to the bounded log (a copy, so a staged batch can be discarded). */
  withLines(log: string[], lines: string[], now = Date.now()): string[] {
    return lines.length === 0 ? log : appendLog(log, lines.map((l) => logLine(now, l)));
  }

  say(line: string): string {
    this.log = this.withLines(this.log, [line]);
    return line;
  }

  percent(): number {
    if (!this.rowsTotal) return 0;
    return Math.min(100, Math.floor((this.counts.rowsRead / this.rowsTotal) * 1000) / 10);
  }

  /** A staged batch: what SQL will hold if the batch commits. */
  stage(): StagedBatch {
    return new StagedBatch(this);
  }
}

export class StagedBatch {
  counts: Counts;
  checkpoint: SyncCheckpoint;
  lines: string[] = [];

  constructor(private readonly state: SyncState) {
    this.counts = { ...state.counts };
    this.checkpoint = { ...state.checkpoint };
  }

  /** One rejected row (1-based row number of the run's read); sampled into the log. */
  reject(rowNumber: number, field: string, message: string): void {
    this.counts.rowsSkipped += 1;
    const samples = this.checkpoint.samples ?? 0;
    if (samples < REJECT_SAMPLES) {
      this.lines.push(`row ${rowNumber} rejected: ${field ? `${field}: ` : ''}${message}`);
      this.checkpoint.samples = samples + 1;
      if (samples + 1 === REJECT_SAMPLES) this.lines.push(`(further rejected rows are counted in rows_skipped, not logged)`);
    }
  }

  /** time_based: remember the greatest insert-time value read. */
  seeInsertTime(value: unknown): void {
    const v = watermarkValue(value);
    if (v === undefined) return;
    const cur = this.checkpoint.maxInsertTime;
    if (cur === undefined || compareWatermarks(v, cur) > 0) this.checkpoint.maxInsertTime = v;
  }

  /**
   * A resumed attempt re-reads from the first row: what the earlier attempts wrote is written
   * again as nothing new, so the counts start again but for the changes that happened.
   * - mirror: inserted, updated and deleted stay (the re-read finds those rows the same); rows
   *   read, rejected and duplicates are counted again by the re-read;
   * - append events: imported stays; the events it stored come back as duplicates, so that many
   *   duplicates are discounted (`settle`). Off only by rows deleted between the attempts;
   * - append people/groups: every update is applied (and counted) again.
   * The insert-time maximum (time_based) and the rejected-row samples already logged stay.
   */
  restart(kind: RestartKind): void {
    const c = this.counts;
    const keep: Partial<Counts> =
      kind === 'mirror' ? { numImported: c.numImported, numUpdated: c.numUpdated, numDeleted: c.numDeleted } : kind === 'events' ? { numImported: c.numImported } : {};
    this.counts = { ...ZERO_COUNTS, ...keep };
    this.checkpoint.offset = 0;
    delete this.checkpoint.readDone;
    if (kind === 'events' && c.numImported > 0) this.checkpoint.discount = c.numImported;
    else delete this.checkpoint.discount;
  }

  /** Before the batch is recorded: the duplicates it found that the earlier attempts' own events explain are not counted. */
  settle(): void {
    const found = this.counts.numDeduplicated - this.state.counts.numDeduplicated;
    const own = Math.min(found, this.checkpoint.discount ?? 0);
    if (own <= 0) return;
    this.counts.numDeduplicated -= own;
    this.checkpoint.discount! -= own;
  }

  read(rows: number): void {
    this.counts.rowsRead += rows;
    this.checkpoint.offset += rows;
  }

  /** The bounded log as it will be stored with this batch. */
  log(): string[] {
    return this.state.withLines(this.state.log, this.lines);
  }

  /** Adopt this batch's view after its transaction committed. */
  adopt(log: string[]): void {
    this.state.counts = this.counts;
    this.state.checkpoint = this.checkpoint;
    this.state.log = log;
  }
}

/**
 * The CPU half of loading one export window: archive entries → gunzip → lines → JSON → Amplitude
 * transform → the ingest validation → rows with serialised properties, plus each batch's
 * per-user latest user properties. Yields one batch per `batchEvents` records (and a last one
 * at the window's end, possibly empty) together with the read position after it, which the
 * writer commits as the checkpoint in the same transaction as the batch.
 *
 * It touches no database, so it runs on a worker thread (decoder-threads.ts) while the process's
 * own thread does nothing but write; or inline.
 */
import { readArchiveLines } from '../../connectors/amplitude/archive-reader.js';
import { canonicalJson } from '../domain/canonical-json.js';
import { laterSnapshot, laterStagedSnapshot, transformAmplitudeEvent, type AmplitudeImportRecord, type AmplitudeUserSnapshot } from '../domain/amplitude-transform.js';
import type { EventLimits } from '../domain/event-record.js';
import { concatEventRows, toEventRows, type EventRows } from '../store/event-rows.js';
import type { Rejection } from '../db/migration-runs.repo.js';
import type { StagedUser } from '../db/migration-user-props.repo.js';
import { validateEvents } from '../ingest/events.ingest.js';

/** Rejected records kept per batch as a sample (the count is exact). */
const SAMPLES_PER_BATCH = 20;

export interface DecodeRequest {
  file: string;
  migrationId: string;
  /** Entries of this window already committed, and records committed in `entry`. */
  entriesDone: string[];
  entry?: string;
  line?: number;
  batchEvents: number;
  limits: EventLimits;
}

export interface DecodedBatch {
  rows: EventRows;
  staged: StagedUser[];
  /** Records read (stored, duplicate or rejected alike). */
  read: number;
  rejected: number;
  samples: Rejection[];
  /** The position after this batch. */
  entriesDone: string[];
  entry?: string;
  line?: number;
  /** The window has no more records. */
  end: boolean;
}

class BatchBuilder {
  records: AmplitudeImportRecord[] = [];
  snapshots: (AmplitudeUserSnapshot | undefined)[] = [];
  origins: [string, number][] = [];
  read = 0;
  rejectedEarly = 0;
  samples: Rejection[] = [];

  constructor(private readonly migrationId: string) {}

  get size(): number {
    return this.records.length + this.rejectedEarly;
  }

  take(text: string, entry: string, line: number): void {
    this.read += 1;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.reject(entry, line, 'line is not valid JSON');
      return;
    }
    const out = transformAmplitudeEvent(raw, { migrationId: this.migrationId });
    if (!out.ok) {
      this.reject(entry, line, out.message);
      return;
    }
    this.records.push(out.record);
    this.snapshots.push(out.user);
    this.origins.push([entry, line]);
  }

  private reject(entry: string, line: number, message: string): void {
    this.rejectedEarly += 1;
    if (this.samples.length < SAMPLES_PER_BATCH) this.samples.push({ entry, line, message });
  }

  build(limits: EventLimits, position: Pick<DecodedBatch, 'entriesDone' | 'entry' | 'line' | 'end'>): DecodedBatch {
    const { events, rejected } = validateEvents(this.records, { strict: false, limits });
    const rejectedIdx = new Set<number>();
    for (const r of rejected) {
      rejectedIdx.add(r.index);
      if (this.samples.length < SAMPLES_PER_BATCH) {
        const [entry, line] = this.origins[r.index]!;
        this.samples.push({ entry, line, message: `${r.field ? `${r.field}: ` : ''}${r.message}` });
      }
    }
    // Per user, the latest snapshot in this batch; across batches the staging table decides.
    const best = new Map<string, AmplitudeUserSnapshot>();
    for (let i = 0; i < this.snapshots.length; i++) {
      const s = this.snapshots[i];
      if (!s || rejectedIdx.has(i)) continue;
      const prev = best.get(s.distinctId);
      best.set(s.distinctId, prev ? laterSnapshot(prev, s) : s);
    }
    const staged: StagedUser[] = [];
    for (const s of best.values()) staged.push({ distinctId: s.distinctId, time: s.time, properties: canonicalJson(s.properties) });
    return {
      rows: toEventRows(events),
      staged,
      read: this.read,
      rejected: this.rejectedEarly + rejected.length,
      samples: this.samples,
      ...position,
      entriesDone: [...position.entriesDone],
    };
  }
}

/**
 * Consecutive batches of one window as one commit: rows in order, per user the snapshot that
 * wins, the counts summed, and the position after the last. The writer takes every batch its
 * decoder has ready at once (decoder-threads.ts), so commits grow when the writer falls behind.
 */
export function mergeBatches(batches: readonly DecodedBatch[]): DecodedBatch {
  if (batches.length === 1) return batches[0]!;
  const staged = new Map<string, StagedUser>();
  let read = 0;
  let rejected = 0;
  const samples: Rejection[] = [];
  for (const b of batches) {
    for (const u of b.staged) {
      const prev = staged.get(u.distinctId);
      staged.set(u.distinctId, prev ? laterStagedSnapshot(prev, u) : u);
    }
    read += b.read;
    rejected += b.rejected;
    samples.push(...b.samples);
  }
  const last = batches[batches.length - 1]!;
  return { ...last, rows: concatEventRows(batches.map((b) => b.rows)), staged: [...staged.values()], read, rejected, samples };
}

export async function* decodeWindow(req: DecodeRequest, signal?: AbortSignal): AsyncGenerator<DecodedBatch> {
  const entriesDone = [...req.entriesDone];
  let entry = req.entry;
  let line = req.line;
  let builder = new BatchBuilder(req.migrationId);
  const from = { entriesDone: new Set(entriesDone), entry, line };
  for await (const batch of readArchiveLines(req.file, { from, batchLines: 1000, signal })) {
    let n = batch.firstLine;
    for (const text of batch.lines) builder.take(text, batch.entry, n++);
    if (batch.entryEnd) {
      entriesDone.push(batch.entry);
      entry = undefined;
      line = undefined;
    } else {
      entry = batch.entry;
      line = n;
    }
    if (builder.size >= req.batchEvents) {
      yield builder.build(req.limits, { entriesDone, entry, line, end: false });
      builder = new BatchBuilder(req.migrationId);
    }
  }
  yield builder.build(req.limits, { entriesDone, entry: undefined, line: undefined, end: true });
}

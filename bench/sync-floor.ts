/**
 * What bounds a sync: it can land rows no faster than the store takes them (the store's floor
 * over the same rows, floors.ts) nor faster than its source hands them out (the bare client
 * read). Its ratio is against the slower of the two, and says which one that was.
 */
import path from 'node:path';
import { FLOOR_NAMES } from './floors.js';
import { runIsolated } from './isolated.js';
import type { BenchRow } from './types.js';
import type { SyncCaseArgs, SyncCaseResult } from './warehouse-sync-cases.js';

export function syncRatio(sync: number, storeFloor: number, bareRead: number): string {
  const bound = storeFloor <= bareRead ? 'store floor' : 'bare read';
  return `${(sync / Math.min(storeFloor, bareRead)).toFixed(2)} of floor (${bound})`;
}

export interface SourceSyncBench {
  /** The rows' section, also the log lines' prefix. */
  section: string;
  /** The cases module (its `floor`, `bareRead` and `sync`), run in a process of its own each. */
  cases: string;
  rows: number;
  repeats: number;
  tmpDir: string;
  log: (msg: string) => void;
  /** How the bare read reads, for its row's note. */
  readNote: string;
}

type Measured = { rate: number; peakRssMb: number };

let storeFiles = 0;

/**
 * One source's three rows into a SQLite store: the store floor over the sync's events, the bare
 * client read and the sync, each the best of `repeats`, interleaved so they see the same load.
 */
export async function sourceSyncRows(b: SourceSyncBench, label: string, source: SyncCaseArgs['source']): Promise<BenchRow[]> {
  const k = `${Math.round(b.rows / 1000)}k`;
  const measure = async (name: string, fn: 'floor' | 'bareRead' | 'sync'): Promise<Measured> => {
    b.log(`${b.section}: ${label}: ${name}`);
    const args: SyncCaseArgs = { rows: b.rows, store: path.join(b.tmpDir, `sync-store-${++storeFiles}.sqlite`), source };
    const { result, peakRssMb } = await runIsolated<SyncCaseResult>(b.cases, fn, args, { as: fn === 'sync' ? 'worker' : 'web' });
    if (result.stored !== b.rows) throw new Error(`${label}: ${name}: ${result.stored} of ${b.rows} rows`);
    return { rate: result.rows / result.seconds, peakRssMb };
  };
  const best = (x: Measured | undefined, y: Measured) => (x && x.rate >= y.rate ? x : y);
  let floor: Measured | undefined, bare: Measured | undefined, sync: Measured | undefined;
  for (let r = 0; r < b.repeats; r++) {
    floor = best(floor, await measure(`store floor, ${k} rows`, 'floor'));
    bare = best(bare, await measure(`bare client read, ${k} rows`, 'bareRead'));
    sync = best(sync, await measure(`sync ${k} rows → SQLite store`, 'sync'));
  }
  const section = b.section;
  return [
    { section, name: `${label}: store floor (${FLOOR_NAMES.sqlite}), ${k} rows`, unit: 'events/s', value: floor!.rate, peakRssMb: floor!.peakRssMb, note: `the sync's own events; best of ${b.repeats}` },
    { section, name: `${label}: bare client read, ${k} rows`, unit: 'rows/s', value: bare!.rate, peakRssMb: bare!.peakRssMb, note: `${b.readNote}; best of ${b.repeats}` },
    {
      section,
      name: `${label}: sync ${k}-row table → SQLite`,
      unit: 'rows/s',
      value: sync!.rate,
      ratio: syncRatio(sync!.rate, floor!.rate, bare!.rate),
      peakRssMb: sync!.peakRssMb,
      note: `goal ≥ 0.7; ${(sync!.rate / bare!.rate).toFixed(2)} of the bare read`,
    },
  ];
}

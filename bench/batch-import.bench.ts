/**
 * Job platform (issue 3): batch-import throughput for an NDJSON.gz file of 100k and 1M events
 * (upload → inspect → job through the real worker runtime and Redis) against the store's floor
 * (floors.ts) on as many rows in the same run, each in its own process so peak RSS shows
 * whether memory stays flat as the file grows ×10; and enqueue-to-start latency p50/p99 of a
 * manual job on an idle worker.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeEventsFile, type ImportArgs, type ImportResult } from './batch-import-cases.js';
import { runIsolated } from './isolated.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { pgReachable } from './pg-reachable.js';
import { FLOOR_NAMES, measureFloor } from './floors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(here, 'batch-import-cases.ts');
const HEAP_CAP_MB = 80;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One import of `file` in its own process (own database file, own upload dir per `tag`); every event must be stored. */
async function importOnce(ctx: BenchContext, kind: 'sqlite' | 'postgres', n: number, file: string, tag: string, heapMb?: number) {
  const args: ImportArgs = {
    kind,
    target: kind === 'sqlite' ? path.join(ctx.tmpDir, `${tag}-${kind}-${n}.sqlite`) : ctx.pgUrl!,
    file,
    n,
    redisUrl: ctx.redisUrl,
    uploadDir: path.join(ctx.tmpDir, `uploads-${tag}-${kind}-${n}`),
  };
  const run = await runIsolated<ImportResult>(CASES, 'importFile', args, { heapMb });
  if (run.result.stored !== n) throw new Error(`batch import ${kind} (${tag}): stored ${run.result.stored} of ${n}`);
  return run;
}

async function importRows(ctx: BenchContext, kind: 'sqlite' | 'postgres', sizes: { n: number; file: string; bytes: number }[]): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const section = `batch import ${kind}`;
  let small: number | undefined;
  for (const { n, file, bytes } of sizes) {
    ctx.log(`batch import ${kind}: ${n.toLocaleString('en-US')} events (${(bytes / 2 ** 20).toFixed(1)} MB gz)`);
    const { result, peakRssMb } = await importOnce(ctx, kind, n, file, 'bi');
    // The store's floor (floors.ts) on as many rows of the same generator, in this run.
    const floorRate = (await measureFloor(kind, n, kind === 'sqlite' ? path.join(ctx.tmpDir, `bi-floor-${n}.sqlite`) : ctx.pgUrl!)).rate;
    const rate = n / result.jobSeconds;
    small ??= peakRssMb;
    const rss = n === sizes[0]!.n ? '' : `; RSS ${(peakRssMb / small).toFixed(2)}× of ${sizes[0]!.n.toLocaleString('en-US')}`;
    rows.push({
      section,
      name: `${n.toLocaleString('en-US')}-event NDJSON.gz: job (read, validate, store)`,
      unit: 'events/s',
      value: rate,
      peakRssMb,
      ratio: `${(rate / floorRate).toFixed(2)} of floor${rss}`,
      note: `floor ${Math.round(floorRate).toLocaleString('en-US')}/s (${FLOOR_NAMES[kind]}); max JS heap ${result.maxHeapMb} MB; job ${result.jobSeconds.toFixed(1)} s`,
    });
  }
  // V8 grows its heap lazily while a process allocates fast, so uncapped RSS grows with the run
  // even when nothing is retained. The same imports under a fixed heap cap show what is: if
  // anything were kept per event the 1M run would fail or slow down, and its RSS would not stay
  // near the 100k run's.
  const capped: number[] = [];
  for (const { n, file } of sizes) {
    const { result, peakRssMb } = await importOnce(ctx, kind, n, file, 'bi-capped', HEAP_CAP_MB);
    capped.push(peakRssMb);
    if (capped.length === sizes.length) {
      rows.push({
        section,
        name: `${n.toLocaleString('en-US')}-event NDJSON.gz, JS heap capped at ${HEAP_CAP_MB} MB`,
        unit: 'events/s',
        value: n / result.jobSeconds,
        peakRssMb,
        ratio: `RSS ${(peakRssMb / capped[0]!).toFixed(2)}× of ${sizes[0]!.n.toLocaleString('en-US')} (same cap)`,
        note: `max JS heap ${result.maxHeapMb} MB; ${sizes[0]!.n.toLocaleString('en-US')} under the cap: ${capped[0]} MB RSS`,
      });
    }
  }
  return rows;
}

export const bench: BenchModule = {
  title: 'job platform: batch-import throughput and memory, enqueue-to-start latency',
  run: async (ctx) => {
    const big = Math.max(20_000, Math.round(1_000_000 * ctx.scale));
    const smallN = Math.max(2_000, Math.round(big / 10));
    const files = [];
    for (const n of [smallN, big]) {
      const file = path.join(ctx.tmpDir, `events-${n}.ndjson.gz`);
      ctx.log(`batch import: writing ${n.toLocaleString('en-US')} events to ${path.basename(file)}`);
      files.push({ n, file, bytes: await writeEventsFile(file, n) });
    }
    const rows = await importRows(ctx, 'sqlite', files);
    if (await pgReachable(ctx.pgUrl)) rows.push(...(await importRows(ctx, 'postgres', files)));
    else ctx.log('batch import: Postgres not reachable, skipping its rows');
    for (const f of files) fs.rmSync(f.file, { force: true });

    const jobs = 300;
    ctx.log(`enqueue-to-start latency: ${jobs} manual jobs, one at a time`);
    const { result } = await runIsolated<{ ms: number[] }>(CASES, 'enqueueLatency', { redisUrl: ctx.redisUrl, jobs });
    const sorted = [...result.ms].sort((a, b) => a - b);
    const section = 'job platform latency';
    rows.push(
      { section, name: 'enqueue → handler start, idle worker (p50)', unit: 'ms', value: percentile(sorted, 50), note: `${jobs} jobs, real Redis` },
      { section, name: 'enqueue → handler start, idle worker (p99)', unit: 'ms', value: percentile(sorted, 99) },
    );
    return rows;
  },
};

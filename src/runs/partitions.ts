/**
 * Partitioned runs, the parts every kind shares: who a worker is, how split points become
 * ranges that cover every row exactly once, and how a partition is named on the dashboard.
 * The lease, checkpoint and counts of each partition live in run_partitions
 * (src/db/run-partitions.repo.ts); each kind supplies how to plan, read and commit one.
 */
import os from 'node:os';
import type { KeyRange } from '../../connectors/warehouse.js';

/** "host:pid": the worker process that took a partition (history lists them). */
export function workerId(): string {
  return `${os.hostname()}:${process.pid}`;
}

/**
 * Split points p0 < p1 < … of `column` → ranges (-∞, p0) ∪ NULL, [p0, p1), …, [pn, ∞): disjoint
 * and together every row, NULLs included (in the first).
 */
export function rangesFromPoints(column: string, points: readonly (string | number)[]): KeyRange[] {
  if (points.length === 0) return [{ column, nulls: true }];
  const out: KeyRange[] = [{ column, to: points[0], nulls: true }];
  for (let i = 0; i < points.length; i++) out.push({ column, from: points[i], ...(i + 1 < points.length ? { to: points[i + 1] } : {}) });
  return out;
}

/** "partition 3 of 11" (1-based for people). */
export function partitionLabel(idx: number, total: number): string {
  return `partition ${idx + 1} of ${total}`;
}

/** A partition's share of the run's progress, for the parent job's progress ring. */
export function flowProgress(done: number, total: number, rowsRead: number, rowsTotal: number | null): { percent: number; partitions_done: number; partitions_total: number; rows_read: number } {
  const byRows = rowsTotal ? (rowsRead / rowsTotal) * 100 : 0;
  const byParts = total ? (done / total) * 100 : 0;
  const percent = Math.min(100, Math.floor(Math.max(byRows, byParts) * 10) / 10);
  return { percent, partitions_done: done, partitions_total: total, rows_read: rowsRead };
}

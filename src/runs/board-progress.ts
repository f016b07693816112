/**
 * A job's progress as the Bull dashboard draws it: a number, or an object whose numeric
 * `progress` fills the ring (the rest shows as the job's detail).
 */
export type ReportedProgress = { percent: number; [k: string]: unknown };
export type Progress = number | ReportedProgress;

export function boardProgress(value: Progress): number | Record<string, unknown> {
  return typeof value === 'number' ? value : { progress: value.percent, ...value };
}

export function shownPercent(value: Progress | undefined): number | undefined {
  return typeof value === 'number' ? value : value?.percent;
}

/** The last report, at 100 %: what a completed job shows, its counts kept. */
export function doneProgress(value: Progress | undefined): Progress {
  return value === undefined || typeof value === 'number' ? 100 : { ...value, percent: 100 };
}

/** `done` of `total` as a percent to one decimal (an empty total is complete). */
export function percentDone(done: number, total: number): number {
  return total === 0 ? 100 : Math.min(100, Math.floor((done / total) * 1000) / 10);
}

/**
 * The bounded log of a sync run: the first lines (where the run says what it is) and the latest
 * lines are kept; the middle is replaced by one marker line saying how many were dropped.
 */
import { isoTime } from './iso-time.js';

export const SYNC_LOG_MAX_LINES = 200;
const HEAD = 20;
const MARKER = /^… (\d+) earlier lines omitted$/;

export function appendLog(log: readonly string[], lines: readonly string[], max = SYNC_LOG_MAX_LINES): string[] {
  const all = [...log, ...lines];
  if (all.length <= max) return all;
  const head = all.slice(0, HEAD);
  const tail = all.slice(all.length - (max - HEAD - 1));
  let dropped = all.length - head.length - tail.length;
  // Lines already replaced by an earlier marker are counted in, not shown twice.
  for (const line of all.slice(HEAD, all.length - tail.length)) {
    const m = MARKER.exec(line);
    if (m) dropped += Number(m[1]) - 1;
  }
  return [...head, `… ${dropped} earlier lines omitted`, ...tail];
}

/** A run's log line (syncs, batch imports, migrations, job logs) with a UTC timestamp prefix. */
export function logLine(now: number, text: string): string {
  return `${isoTime(now)} ${text}`;
}

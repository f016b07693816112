/**
 * Import schedules: `hourly`, `daily`, `weekly`, `api_only` (never scheduled, manual syncs only)
 * or a cron expression (5 fields, or 6 with seconds first). Named schedules fire at the top of the
 * hour, at 00:00, and on Mondays at 00:00, in the scheduler's time zone (SCHEDULER_TIMEZONE, UTC).
 */
import cron from 'node-cron';
import { ownValue } from '../lib/own.js';

export const NAMED_SCHEDULES = {
  hourly: '0 * * * *',
  daily: '0 0 * * *',
  weekly: '0 0 * * 1',
} as const;

export type ScheduleOutcome = { ok: true; cron: string | null } | { ok: false; message: string };

/** The cron expression a schedule fires on (null for api_only), or why the schedule is invalid. */
export function scheduleCron(schedule: string): ScheduleOutcome {
  const s = schedule.trim();
  if (s === 'api_only') return { ok: true, cron: null };
  const named = ownValue<string>(NAMED_SCHEDULES, s);
  if (named !== undefined) return { ok: true, cron: named };
  const fields = s.split(/\s+/).length;
  if ((fields === 5 || fields === 6) && cron.validate(s)) return { ok: true, cron: s };
  return {
    ok: false,
    message: `schedule must be hourly, daily, weekly, api_only or a cron expression (like "15 3 * * *"), not ${JSON.stringify(schedule)}`,
  };
}

/** How far back a returning scheduler looks for a missed slot (covers weekly schedules). */
export const CATCH_UP_WINDOW_MS = 8 * 24 * 3600 * 1000;

/**
 * The latest slot of `cronExpr` in (afterMs, nowMs], or undefined — what a scheduler that missed
 * it should run once. Walks back minute by minute within a bounded window, so the cost is
 * bounded whatever the gap. Seconds-level expressions (6 fields) have none: their next slot is
 * seconds away, and a catch-up would only put a gap-straddling extra run before it.
 *
 * A minute whose wall-clock time came an hour (or half an hour) earlier too — the hour repeated
 * when clocks go back — is no slot: the live task fires only the first of the two, so a catch-up
 * taking the second would run a daily schedule twice that day.
 */
export function latestSlotBetween(cronExpr: string, timezone: string, afterMs: number, nowMs: number): number | undefined {
  if (cronExpr.trim().split(/\s+/).length === 6) return undefined;
  const step = 60_000;
  const floor = Math.max(afterMs, nowMs - CATCH_UP_WINDOW_MS);
  const task = cron.createTask(cronExpr, () => {}, { timezone });
  try {
    for (let t = nowMs - (nowMs % step); t > floor; t -= step) {
      if (task.match(new Date(t)) && !repeatsEarlierWallTime(t, timezone)) return t;
    }
    return undefined;
  } finally {
    void task.destroy();
  }
}

const wallClocks = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock date and minute of `ms` in `timezone`. */
function wallMinute(ms: number, timezone: string): string {
  let f = wallClocks.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    wallClocks.set(timezone, f);
  }
  return f.format(ms);
}

/** Whether `ms`'s wall-clock minute already came 30 or 60 minutes earlier (a repeated hour at a fall-back). */
export function repeatsEarlierWallTime(ms: number, timezone: string): boolean {
  const wall = wallMinute(ms, timezone);
  return wallMinute(ms - 3_600_000, timezone) === wall || wallMinute(ms - 1_800_000, timezone) === wall;
}

/**
 * Import schedules: `hourly`, `daily`, `weekly`, `api_only` (never scheduled, manual syncs only)
 * or a cron expression (5 fields, or 6 with seconds first). Named schedules fire at the top of the
 * hour, at 00:00, and on Mondays at 00:00, in the scheduler's time zone (SCHEDULER_TIMEZONE, UTC).
 */
import cron from 'node-cron';

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
  if (s in NAMED_SCHEDULES) return { ok: true, cron: NAMED_SCHEDULES[s as keyof typeof NAMED_SCHEDULES] };
  const fields = s.split(/\s+/).length;
  if ((fields === 5 || fields === 6) && cron.validate(s)) return { ok: true, cron: s };
  return {
    ok: false,
    message: `schedule must be hourly, daily, weekly, api_only or a cron expression (like "15 3 * * *"), not ${JSON.stringify(schedule)}`,
  };
}

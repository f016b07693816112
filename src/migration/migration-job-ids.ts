/**
 * Deterministic BullMQ job ids of a migration's jobs. The same step of the same run always maps
 * to the same id, so a second enqueue (a retried request, the reconciler, two day jobs finishing
 * together) is a no-op while the job exists. Each phase has its own ids: a finished count job
 * stays in Redis for a while and must not swallow the load job of the same day.
 */
export const countJobId = (migrationId: string, day: string) => `migration-${migrationId}-${day}-count`;
export const loadJobId = (migrationId: string, day: string) => `migration-${migrationId}-${day}-load`;
/** The step after the count pass: limit check, dry-run result, or the start of loading. */
export const countedJobId = (migrationId: string) => `migration-${migrationId}-counted`;
/** The step after the load pass: profiles applied, run marked done. */
export const finalizeJobId = (migrationId: string) => `migration-${migrationId}-finalize`;

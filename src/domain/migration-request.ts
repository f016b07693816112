/**
 * The body of `POST /migrate/<tool>`: the seed's field names and Mixpanel's published spellings,
 * validated into one normalised request. Pure; `now` is passed in so date defaults are testable.
 */
import { z } from 'zod';

export const SUPPORTED_SOURCE_TOOLS = ['amplitude'] as const;
export type SourceTool = (typeof SUPPORTED_SOURCE_TOOLS)[number];

/** Longest range one migration may cover (Amplitude's own export limit is 365 days). */
export const MAX_RANGE_DAYS = 365;
/** Days covered when no dates are given. */
export const DEFAULT_RANGE_DAYS = 30;

/** Canonical field → accepted aliases (Mixpanel's documentation spells them this way). */
const ALIASES = {
  SOURCE_TOOL_API_KEY: ['AMPLITUDE_API_KEY'],
  SOURCE_TOOL_API_SECRET: ['AMPLITUDE_API_SECRET'],
  SERVICE_TOKEN: ['MIXPANEL_TOKEN'],
} as const;

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

export interface MigrationRequest {
  tool: SourceTool;
  apiKey: string;
  apiSecret: string;
  serviceToken: string;
  /** Inclusive UTC days, YYYY-MM-DD. */
  startDate: string;
  endDate: string;
  dryRun: boolean;
  /** Which of the source tool's data centres to export from, when the body says (REGION). */
  sourceRegion?: 'US' | 'EU';
}

export type ParsedMigrationRequest = { ok: true; request: MigrationRequest } | { ok: false; message: string; field?: string };

const credential = (name: string) =>
  z
    .string({ error: `'${name}' must be a string` })
    .trim()
    .min(1, `'${name}' must not be empty`)
    .max(512, `'${name}' is too long`);

const bodySchema = z
  .object({
    SOURCE_TOOL_API_KEY: credential('SOURCE_TOOL_API_KEY'),
    SOURCE_TOOL_API_SECRET: credential('SOURCE_TOOL_API_SECRET'),
    SERVICE_TOKEN: credential('SERVICE_TOKEN'),
    START_DATE: z.string({ error: "'START_DATE' must be a string 'YYYY-MM-DD'" }).optional(),
    END_DATE: z.string({ error: "'END_DATE' must be a string 'YYYY-MM-DD'" }).optional(),
    DRY_RUN: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], {
        error: "'DRY_RUN' must be true or false",
      })
      .optional(),
    REGION: z
      .string({ error: "'REGION' must be 'US' or 'EU'" })
      .transform((v) => v.trim().toUpperCase())
      .pipe(z.enum(['US', 'EU'], { error: "'REGION' must be 'US' or 'EU'" }))
      .optional(),
  })
  .strict();

const KNOWN_FIELDS = [...Object.keys(bodySchema.shape), ...Object.values(ALIASES).flat()];

/** YYYY-MM-DD that names a real calendar day → ms at its UTC midnight. */
export function parseDay(value: string): number | undefined {
  if (!DATE_RE.test(value)) return undefined;
  const t = Date.parse(`${value}T00:00:00Z`);
  if (!Number.isFinite(t)) return undefined;
  return new Date(t).toISOString().slice(0, 10) === value ? t : undefined;
}

export function formatDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

/** Every day from start to end inclusive, YYYY-MM-DD. */
export function daysBetween(startDate: string, endDate: string): string[] {
  const start = parseDay(startDate)!;
  const end = parseDay(endDate)!;
  const out: string[] = [];
  for (let t = start; t <= end; t += DAY_MS) out.push(formatDay(t));
  return out;
}

/** Folds the aliases onto the canonical names; refuses conflicting spellings of one field. */
function foldAliases(body: Record<string, unknown>): { ok: true; body: Record<string, unknown> } | { ok: false; message: string; field: string } {
  const out: Record<string, unknown> = { ...body };
  for (const [canonical, aliases] of Object.entries(ALIASES)) {
    for (const alias of aliases) {
      if (!(alias in out)) continue;
      const value = out[alias];
      delete out[alias];
      if (canonical in out && out[canonical] !== value) {
        return { ok: false, field: canonical, message: `'${canonical}' and '${alias}' are the same field and disagree; send one of them` };
      }
      out[canonical] = value;
    }
  }
  return { ok: true, body: out };
}

export function parseMigrationRequest(tool: SourceTool, body: unknown, now: number): ParsedMigrationRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, message: 'the request body must be a JSON object' };
  }
  const folded = foldAliases(body as Record<string, unknown>);
  if (!folded.ok) return folded;
  const parsed = bodySchema.safeParse(folded.body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      return { ok: false, message: `unknown field(s) ${issue.keys.map((k) => `'${k}'`).join(', ')}; accepted: ${KNOWN_FIELDS.join(', ')}` };
    }
    const field = String(issue.path[0] ?? '');
    const missing = issue.code === 'invalid_type' && (folded.body as Record<string, unknown>)[field] === undefined;
    const aliases = (ALIASES as Record<string, readonly string[]>)[field];
    const hint = aliases ? ` (or '${aliases[0]}')` : '';
    return { ok: false, field, message: missing ? `'${field}'${hint} is required` : issue.message };
  }
  const b = parsed.data;

  const today = Math.floor(now / DAY_MS) * DAY_MS;
  let start: number | undefined;
  let end: number | undefined;
  if (b.START_DATE !== undefined) {
    start = parseDay(b.START_DATE);
    if (start === undefined) return { ok: false, field: 'START_DATE', message: `'START_DATE' must be a calendar date 'YYYY-MM-DD', got '${b.START_DATE}'` };
  }
  if (b.END_DATE !== undefined) {
    end = parseDay(b.END_DATE);
    if (end === undefined) return { ok: false, field: 'END_DATE', message: `'END_DATE' must be a calendar date 'YYYY-MM-DD', got '${b.END_DATE}'` };
  }
  // Default: the last DEFAULT_RANGE_DAYS complete UTC days, ending yesterday.
  end ??= start !== undefined && start > today - DAY_MS ? start : today - DAY_MS;
  start ??= end - (DEFAULT_RANGE_DAYS - 1) * DAY_MS;
  if (end > today) return { ok: false, field: 'END_DATE', message: `'END_DATE' ${formatDay(end)} is in the future (today is ${formatDay(today)} UTC)` };
  if (start > end) {
    return { ok: false, field: 'START_DATE', message: `'START_DATE' ${formatDay(start)} is after 'END_DATE' ${formatDay(end)}` };
  }
  const days = (end - start) / DAY_MS + 1;
  if (days > MAX_RANGE_DAYS) {
    return { ok: false, field: 'END_DATE', message: `the range covers ${days} days; one migration covers at most ${MAX_RANGE_DAYS} days — split it into several` };
  }
  return {
    ok: true,
    request: {
      tool,
      apiKey: b.SOURCE_TOOL_API_KEY,
      apiSecret: b.SOURCE_TOOL_API_SECRET,
      serviceToken: b.SERVICE_TOKEN,
      startDate: formatDay(start),
      endDate: formatDay(end),
      dryRun: b.DRY_RUN ?? false,
      sourceRegion: b.REGION,
    },
  };
}

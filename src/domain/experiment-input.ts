/**
 * Request bodies of the experiments API, validated strictly: unknown fields, wrong types and
 * out-of-range values are refused with a message naming the field. Pure.
 *
 * Read-only fields (id, created, status, start_date, …) are unknown fields here: status and
 * dates change only through the lifecycle actions.
 */
import { z } from 'zod';

/** Nested JSON (settings, variants, …) deeper than this is refused: it is never a real setting,
 * and bounding it keeps every recursive walk of it safe. */
export const MAX_JSON_DEPTH = 32;

function depthWithin(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (max <= 0) return false;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  return children.every((c) => depthWithin(c, max - 1));
}

const jsonObject = z
  .record(z.string(), z.unknown())
  .refine((v) => depthWithin(v, MAX_JSON_DEPTH), { message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
const objectList = z.array(jsonObject).max(1000);
const text = (max: number) => z.string().max(max);

/** A real calendar date in the form YYYY-MM-DD. */
export function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

const fields = {
  name: z.string().trim().min(1, 'must not be empty').max(255),
  description: text(10_000).nullable(),
  hypothesis: text(10_000).nullable(),
  tags: z.array(z.string().trim().min(1, 'must not be empty').max(255)).max(100),
  is_favorited: z.boolean(),
  pinned_date: z.string().refine(isCalendarDate, 'must be a date YYYY-MM-DD').nullable(),
  is_shared_with_project: z.boolean(),
  variants: objectList,
  metrics: objectList,
  settings: jsonObject,
  exposures_cache: jsonObject,
  results_cache: jsonObject,
  feature_flag: jsonObject.nullable(),
};

export const createExperimentInput = z.strictObject({
  ...fields,
  description: fields.description.optional(),
  hypothesis: fields.hypothesis.optional(),
  tags: fields.tags.optional(),
  is_favorited: fields.is_favorited.optional(),
  pinned_date: fields.pinned_date.optional(),
  is_shared_with_project: fields.is_shared_with_project.optional(),
  variants: fields.variants.optional(),
  metrics: fields.metrics.optional(),
  settings: fields.settings.optional(),
  exposures_cache: fields.exposures_cache.optional(),
  results_cache: fields.results_cache.optional(),
  feature_flag: fields.feature_flag.optional(),
});
export type CreateExperimentInput = z.infer<typeof createExperimentInput>;

export const updateExperimentInput = z
  .strictObject(fields)
  .partial()
  .refine((v) => Object.keys(v).length > 0, 'name at least one field to update');
export type UpdateExperimentInput = z.infer<typeof updateExperimentInput>;

export const decideInput = z.strictObject({
  success: z.boolean(),
  variant: z.string().min(1).max(255).nullable().optional(),
  message: text(10_000).nullable().optional(),
});
export type DecideInput = z.infer<typeof decideInput>;

/** launch, force_conclude, archive, unarchive take no fields (an empty body or `{}`). */
export const emptyInput = z.strictObject({});

/** One readable line for the first problem, e.g. `tags.0: expected string, received number`. */
export function describeIssues(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request body';
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length ? ` in '${issue.path.join('.')}'` : '';
    return `unknown field${issue.keys.length > 1 ? 's' : ''}${where}: ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
  }
  const where = issue.path.length ? `'${issue.path.join('.')}': ` : '';
  return `${where}${issue.message}`;
}

// eslint-disable-next-line no-control-regex -- finding NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The path of the first string (or object key) in `value` that neither database can store
 * faithfully — a NUL character (Postgres text and jsonb refuse it) or an unpaired UTF-16
 * surrogate (jsonb refuses it, text would silently replace it) — or undefined when all are fine.
 * Iterative, so any nesting depth is safe.
 */
export function unstorableTextAt(value: unknown): string | undefined {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) return path || '(body)';
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        const at = path ? `${path}.${k}` : k;
        if (UNSTORABLE.test(k)) return at;
        stack.push([child, at]);
      }
    }
  }
  return undefined;
}

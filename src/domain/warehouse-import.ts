/**
 * A warehouse import definition in Mixpanel's field names: the input schema, the
 * rules between fields, and the checks against the source's real columns. Pure.
 */
import { z } from 'zod';
import { scheduleCron } from './sync-schedule.js';

export const IMPORT_TYPES = ['events', 'people', 'groups', 'lookup_table'] as const;
export const SYNC_MODES = ['time_based', 'full_sync', 'one_time', 'mirror'] as const;
export type ImportType = (typeof IMPORT_TYPES)[number];
export type SyncMode = (typeof SYNC_MODES)[number];

const columnName = (field: string) =>
  z
    .string({ error: `${field} must be a column name (a string)` })
    .min(1, `${field} must not be empty`)
    .max(255, `${field} is too long`);

const id = (field: string) =>
  z.union([z.number(), z.string().regex(/^\d+$/)], { error: `${field} must be a positive integer` }).transform(Number).pipe(
    z.number().int().positive(`${field} must be a positive integer`),
  );

const tableParams = z.union(
  [
    z.object({ table: z.string().trim().min(1, 'table_params.table must not be empty').max(1000) }).strict(),
    z.object({ query: z.string().trim().min(1, 'table_params.query must not be empty').max(100_000) }).strict(),
  ],
  { error: 'table_params must be {"table": "name"} or {"query": "SELECT …"}' },
);

export const importInputSchema = z
  .object({
    warehouse_source_id: id('warehouse_source_id'),
    import_type: z.enum(IMPORT_TYPES, { error: `import_type must be one of ${IMPORT_TYPES.join(', ')}` }),
    name: z.string().max(255).optional(),
    table_params: tableParams,
    sync_mode: z.enum(SYNC_MODES, { error: `sync_mode must be one of ${SYNC_MODES.join(', ')}` }),
    schedule: z.string({ error: 'schedule must be a string' }).max(120).optional(),
    paused: z.boolean({ error: 'paused must be true or false' }).optional(),
    event_name: z.string().min(1, 'event_name must not be empty').max(255).optional(),
    event_column_name: columnName('event_column_name').optional(),
    time_column_name: columnName('time_column_name').optional(),
    insert_id_column_name: columnName('insert_id_column_name').optional(),
    user_column_name: columnName('user_column_name').optional(),
    distinct_id_column_name: columnName('distinct_id_column_name').optional(),
    device_column_name: columnName('device_column_name').optional(),
    json_properties_column_name: z
      .union([columnName('json_properties_column_name'), z.array(columnName('json_properties_column_name')).max(50)], {
        error: 'json_properties_column_name must be a column name or a list of at most 50 of them',
      })
      .optional(),
    insert_time_column_name: columnName('insert_time_column_name').optional(),
    group_key: z.string().min(1, 'group_key must not be empty').max(255).optional(),
    group_id_column: columnName('group_id_column').optional(),
    property_key_column_name: columnName('property_key_column_name').optional(),
    lookup_table_id: id('lookup_table_id').optional(),
  })
  .strict();

export type ImportInput = z.infer<typeof importInputSchema>;

/** What an import stores: the input with json columns as a list and a resolved schedule. */
export interface ImportDefinition extends Omit<ImportInput, 'json_properties_column_name' | 'schedule' | 'paused'> {
  json_properties_column_name: string[];
  schedule: string;
}

const TYPE_FIELDS: Record<ImportType, readonly (keyof ImportInput)[]> = {
  events: [
    'event_name',
    'event_column_name',
    'time_column_name',
    'insert_id_column_name',
    'user_column_name',
    'distinct_id_column_name',
    'device_column_name',
    'json_properties_column_name',
    'insert_time_column_name',
  ],
  people: ['user_column_name', 'time_column_name', 'json_properties_column_name', 'insert_time_column_name'],
  groups: ['group_key', 'group_id_column', 'time_column_name', 'json_properties_column_name', 'insert_time_column_name'],
  lookup_table: ['property_key_column_name', 'lookup_table_id'],
};
const MAPPING_FIELDS = [...new Set(Object.values(TYPE_FIELDS).flat())];

/** Rules between fields; returns the problems (empty when the definition is consistent). */
export function definitionProblems(input: ImportInput): string[] {
  const problems: string[] = [];
  const type = input.import_type;
  for (const f of MAPPING_FIELDS) {
    if (input[f] !== undefined && !TYPE_FIELDS[type].includes(f)) problems.push(`${f} does not apply to ${type} imports`);
  }
  const need = (f: keyof ImportInput, why: string) => {
    if (input[f] === undefined) problems.push(`${f} is required ${why}`);
  };
  switch (type) {
    case 'events':
      if ((input.event_name === undefined) === (input.event_column_name === undefined)) {
        problems.push('events imports need exactly one of event_name (a fixed name) or event_column_name');
      }
      need('time_column_name', 'for events imports');
      break;
    case 'people':
      need('user_column_name', 'for people imports (the user ID column)');
      need('time_column_name', 'for people imports (the latest row per user wins)');
      break;
    case 'groups':
      need('group_key', 'for groups imports');
      need('group_id_column', 'for groups imports');
      need('time_column_name', 'for groups imports (the latest row per group wins)');
      break;
    case 'lookup_table':
      need('property_key_column_name', 'for lookup_table imports (the key column)');
      need('lookup_table_id', 'for lookup_table imports');
      if (input.sync_mode === 'time_based') problems.push('lookup_table imports replace the whole table: use sync_mode full_sync or one_time');
      break;
  }
  if (input.sync_mode === 'time_based') need('insert_time_column_name', "with sync_mode time_based (the watermark column)");
  if (input.sync_mode === 'mirror') {
    if (type === 'lookup_table') problems.push('lookup_table imports replace the whole table on every run already: use sync_mode full_sync, not mirror');
    if (type === 'events') need('insert_id_column_name', 'with sync_mode mirror (each row is followed by its insert id: new, changed or deleted)');
  }
  if (input.sync_mode !== 'time_based' && input.insert_time_column_name !== undefined) {
    problems.push('insert_time_column_name applies to sync_mode time_based only');
  }
  if (input.schedule !== undefined) {
    const s = scheduleCron(input.schedule);
    if (!s.ok) problems.push(s.message);
    else if (input.sync_mode === 'one_time' && s.cron !== null) problems.push('one_time imports run once when triggered: schedule must be api_only');
  }
  return problems;
}

/** Default schedule: daily for recurring modes, api_only for one_time. */
export function toDefinition(input: ImportInput): ImportDefinition {
  const { json_properties_column_name: json, schedule, paused: _paused, ...rest } = input;
  return {
    ...rest,
    json_properties_column_name: json === undefined ? [] : Array.isArray(json) ? json : [json],
    schedule: (schedule ?? (input.sync_mode === 'one_time' ? 'api_only' : 'daily')).trim(),
  };
}

/** The source columns a definition names, with the field naming each. */
export function namedColumns(def: ImportDefinition): { field: string; column: string }[] {
  const out: { field: string; column: string }[] = [];
  const add = (field: keyof ImportDefinition) => {
    const v = def[field];
    if (typeof v === 'string') out.push({ field, column: v });
  };
  for (const f of [
    'event_column_name',
    'time_column_name',
    'insert_id_column_name',
    'user_column_name',
    'distinct_id_column_name',
    'device_column_name',
    'insert_time_column_name',
    'group_id_column',
    'property_key_column_name',
  ] as const) {
    add(f);
  }
  for (const c of def.json_properties_column_name) out.push({ field: 'json_properties_column_name', column: c });
  return out;
}

export interface SourceColumn {
  name: string;
  type: string;
  nullable: boolean;
}

/** Checks against the source's real columns: every named column exists; full_sync needs a NOT NULL time column. */
export function schemaProblems(def: ImportDefinition, columns: readonly SourceColumn[]): string[] {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const problems: string[] = [];
  const list = columns.map((c) => c.name).join(', ');
  for (const { field, column } of namedColumns(def)) {
    if (!byName.has(column)) problems.push(`${field}: column '${column}' does not exist in the source (columns: ${list})`);
  }
  if (def.import_type === 'events' && def.sync_mode === 'full_sync' && def.time_column_name) {
    const time = byName.get(def.time_column_name);
    if (time?.nullable) {
      problems.push(
        `time_column_name: column '${def.time_column_name}' is nullable in the source; full_sync needs a NOT NULL event time column (make it NOT NULL, or use time_based)`,
      );
    }
  }
  return problems;
}

/** Zod issues as one readable line each ("field: message"); `within` names the object validated (`config`). */
export function zodProblems(error: z.ZodError, within?: string): string[] {
  return error.issues.map((i) => {
    if (i.code === 'unrecognized_keys') return `unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `'${k}'`).join(', ')}${within ? ` in ${within}` : ''}`;
    const path = [...(within ? [within] : []), ...i.path].join('.');
    return path && !i.message.startsWith(path) ? `${path}: ${i.message}` : i.message;
  });
}

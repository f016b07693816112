/**
 * Turns Statement Execution API cells (JSON_ARRAY format: every value a string or null) into what
 * the sync maps into events, by the manifest's `type_name`:
 * - BYTE/SHORT/INT/LONG as Numbers while exact, every digit as a string past ±2^53-1;
 * - DECIMAL, FLOAT, DOUBLE as Numbers (non-finite stay strings); BOOLEAN as booleans;
 * - TIMESTAMP / TIMESTAMP_NTZ / DATE as Dates (no zone: read as UTC);
 * - ARRAY / MAP / STRUCT parsed from their JSON text; everything else (STRING, BINARY base64,
 *   INTERVAL) as the text.
 */
import { integerValue } from '../bigquery/bigquery-values.js';

export interface ManifestColumn {
  name: string;
  type_name?: string;
  type_text?: string;
}

type Converter = (raw: string) => unknown;

function utcDate(text: string): Date | string {
  const t = text.trim().replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(t) ? t : `${t.length === 10 ? `${t}T00:00:00` : t}Z`);
  return Number.isFinite(ms) ? new Date(ms) : text;
}

function number(raw: string): number | string {
  const n = Number(raw);
  return Number.isFinite(n) ? n : raw;
}

function json(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function converterFor(col: ManifestColumn): Converter {
  switch ((col.type_name ?? 'STRING').toUpperCase()) {
    case 'BYTE':
    case 'SHORT':
    case 'INT':
    case 'LONG':
      return integerValue;
    case 'DECIMAL':
    case 'FLOAT':
    case 'DOUBLE':
      return number;
    case 'BOOLEAN':
      return (raw) => raw === 'true';
    case 'TIMESTAMP':
    case 'TIMESTAMP_NTZ':
    case 'DATE':
      return utcDate;
    case 'ARRAY':
    case 'MAP':
    case 'STRUCT':
      return json;
    default:
      return (raw) => raw;
  }
}

/** Builds a function from a JSON_ARRAY row to a `{column: value}` record. */
export function rowBuilder(columns: ManifestColumn[]): (values: (string | null)[]) => Record<string, unknown> {
  const converters = columns.map(converterFor);
  const names = columns.map((c) => c.name);
  return (values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const v = values[i];
      row[names[i]!] = v === null || v === undefined ? null : converters[i]!(v);
    }
    return row;
  };
}

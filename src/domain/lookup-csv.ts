/**
 * The rules of a lookup-table CSV beyond RFC 4180 syntax (which csv-parse checks): the first
 * line is the header, header names are non-empty and unique, every row has as many fields as
 * the header, the first column is the row's key (non-empty, unique — uniqueness is checked by
 * the caller, which sees every row). The other cells are typed by csv-typing.ts. Pure.
 */
import { typeCell } from './csv-typing.js';
import { isUnstorableString } from './event-record.js';

const UNSTORABLE = 'contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored';

/** Width of lookup_rows.key. */
export const MAX_KEY_LENGTH = 255;
const MAX_HEADER_LENGTH = 255;

/** An error message for the header, or undefined when it is valid. */
export function checkHeader(header: readonly string[]): string | undefined {
  if (header.length === 0 || (header.length === 1 && header[0] === '')) return 'the CSV is empty: its first line must be a header naming the columns';
  const seen = new Map<string, number>();
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!;
    if (name === '') return `header column ${i + 1} has no name`;
    if (name.length > MAX_HEADER_LENGTH) return `header column ${i + 1} is longer than ${MAX_HEADER_LENGTH} characters`;
    if (name === '__proto__') return `header column ${i + 1}: '__proto__' is not allowed as a column name`;
    if (isUnstorableString(name)) return `header column ${i + 1} ${UNSTORABLE}`;
    const first = seen.get(name);
    if (first !== undefined) return `duplicate header '${name}' (columns ${first + 1} and ${i + 1}): header names must be unique`;
    seen.set(name, i);
  }
  return undefined;
}

export type LookupRowOutcome = { ok: true; key: string; properties: Record<string, unknown> } | { ok: false; message: string };

/** One data row against a valid header: its key and typed properties (empty cells left out). */
export function buildLookupRow(header: readonly string[], cells: readonly string[]): LookupRowOutcome {
  if (cells.length !== header.length) {
    return { ok: false, message: `has ${cells.length} field(s) but the header has ${header.length}` };
  }
  const key = cells[0]!;
  if (key === '') return { ok: false, message: `the key ('${header[0]}', the first column) is empty` };
  if (key.length > MAX_KEY_LENGTH) return { ok: false, message: `the key is longer than ${MAX_KEY_LENGTH} characters` };
  for (let i = 0; i < cells.length; i++) {
    if (isUnstorableString(cells[i]!)) return { ok: false, message: `the field in column '${header[i]}' ${UNSTORABLE}` };
  }
  const properties: Record<string, unknown> = {};
  for (let i = 1; i < header.length; i++) {
    const cell = typeCell(cells[i]!);
    if (cell.type !== 'absent') properties[header[i]!] = cell.value;
  }
  return { ok: true, key, properties };
}

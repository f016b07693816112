/**
 * Top-level properties as typed parallel arrays, written beside the JSON text. ClickHouse 18.16
 * has no JSONExtract (and visitParam* finds a key anywhere, nested ones included), so reports
 * that filter or segment on `properties["k"]` read these arrays instead: `indexOf(prop_keys, k)`
 * picks the slot, and the slot carries the value's type, number, string form and canonical JSON
 * — everything domain/where-evaluate.ts needs to give the same answer in SQL. Pure.
 */
import { canonicalJson, isCanonicalAsIs } from '../../domain/canonical-json.js';
import type { RowBinaryWriter } from './row-binary-writer.js';

/** Value types as stored in `prop_types` (0, the array default, is "undefined"). */
export const T_UNDEFINED = 0;
export const T_NULL = 1;
export const T_BOOL = 2;
export const T_NUMBER = 3;
export const T_STRING = 4;
export const T_ARRAY = 5;
export const T_OBJECT = 6;

export interface PropertyColumns {
  prop_keys: string[];
  prop_types: number[];
  /** Numbers as themselves, booleans as 0/1, else 0. */
  prop_nums: number[];
  /** What `string()` gives: the string, String(number|boolean), JSON text of arrays and objects. */
  prop_strs: string[];
  /** Canonical JSON of arrays and objects (what `==` compares them by), else ''. */
  prop_canon: string[];
  /** Arrays: each element as (type, number, string, canonical) for `in` and list segments. */
  prop_elem_types: number[][];
  prop_elem_nums: number[][];
  prop_elem_strs: string[][];
  prop_elem_canon: string[][];
}

export interface TypedValue {
  type: number;
  num: number;
  str: string;
  canon: string;
}

export function typedValue(v: unknown): TypedValue {
  if (v === null || v === undefined) return { type: v === null ? T_NULL : T_UNDEFINED, num: 0, str: '', canon: '' };
  switch (typeof v) {
    case 'boolean':
      return { type: T_BOOL, num: v ? 1 : 0, str: String(v), canon: '' };
    case 'number':
      return { type: T_NUMBER, num: v, str: String(v), canon: '' };
    case 'string':
      return { type: T_STRING, num: 0, str: v, canon: '' };
    default: {
      const str = JSON.stringify(v);
      return { type: Array.isArray(v) ? T_ARRAY : T_OBJECT, num: 0, str, canon: isCanonicalAsIs(v as object) ? str : canonicalJson(v) };
    }
  }
}

export function propertyColumns(properties: Readonly<Record<string, unknown>>): PropertyColumns {
  const out: PropertyColumns = {
    prop_keys: [],
    prop_types: [],
    prop_nums: [],
    prop_strs: [],
    prop_canon: [],
    prop_elem_types: [],
    prop_elem_nums: [],
    prop_elem_strs: [],
    prop_elem_canon: [],
  };
  for (const key of Object.keys(properties)) {
    const raw = properties[key];
    if (raw === undefined) continue;
    const value = stored(raw);
    const t = typedValue(value);
    out.prop_keys.push(key);
    out.prop_types.push(t.type);
    out.prop_nums.push(t.num);
    out.prop_strs.push(t.str);
    out.prop_canon.push(t.canon);
    const elems = Array.isArray(value) ? value.map((e) => typedValue(stored(e))) : [];
    out.prop_elem_types.push(elems.map((e) => e.type));
    out.prop_elem_nums.push(elems.map((e) => e.num));
    out.prop_elem_strs.push(elems.map((e) => e.str));
    out.prop_elem_canon.push(elems.map((e) => e.canon));
  }
  return out;
}

/**
 * A value as its row stores it: a number JSON cannot hold (1e999 parses to Infinity) is the
 * `null` the properties text keeps, so the typed columns agree with the text.
 */
function stored(v: unknown): unknown {
  return typeof v === 'number' && !Number.isFinite(v) ? null : v;
}

/**
 * The typed columns of propertyColumns, in table order, written as RowBinary: each value typed
 * once, then one pass per column. propertyColumns stays the definition; a unit test decodes
 * these bytes and holds the two equal.
 */
export function writePropertyColumns(w: RowBinaryWriter, properties: Readonly<Record<string, unknown>>): void {
  const keys: string[] = [];
  const typed: TypedValue[] = [];
  const elements: (TypedValue[] | undefined)[] = [];
  for (const key of Object.keys(properties)) {
    const v = properties[key];
    if (v === undefined) continue;
    keys.push(key);
    typed.push(typedValue(stored(v)));
    elements.push(Array.isArray(v) ? v.map((e) => typedValue(stored(e))) : undefined);
  }
  const n = keys.length;
  w.varUInt(n);
  for (const k of keys) w.string(k);
  w.varUInt(n);
  for (const t of typed) w.u8(t.type);
  w.varUInt(n);
  for (const t of typed) w.f64(t.num);
  w.varUInt(n);
  for (const t of typed) w.string(t.str);
  w.varUInt(n);
  for (const t of typed) w.string(t.canon);
  writeElements(w, elements, (t) => w.u8(t.type));
  writeElements(w, elements, (t) => w.f64(t.num));
  writeElements(w, elements, (t) => w.string(t.str));
  writeElements(w, elements, (t) => w.string(t.canon));
}

/** One Array(Array(…)) column: per key its array value's elements, none for any other value. */
function writeElements(w: RowBinaryWriter, elements: readonly (TypedValue[] | undefined)[], one: (t: TypedValue) => void): void {
  w.varUInt(elements.length);
  for (const list of elements) {
    w.varUInt(list?.length ?? 0);
    if (list) for (const t of list) one(t);
  }
}

/**
 * Top-level properties as typed parallel arrays, written beside the JSON text. ClickHouse 18.16
 * has no JSONExtract (and visitParam* finds a key anywhere, nested ones included), so reports
 * that filter or segment on `properties["k"]` read these arrays instead: `indexOf(prop_keys, k)`
 * picks the slot, and the slot carries the value's type, number, string form and canonical JSON
 * — everything domain/where-evaluate.ts needs to give the same answer in SQL. Pure.
 */
import { canonicalJson } from '../../domain/canonical-json.js';

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
    default:
      return { type: Array.isArray(v) ? T_ARRAY : T_OBJECT, num: 0, str: JSON.stringify(v), canon: canonicalJson(v) };
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
    const value = properties[key];
    if (value === undefined) continue;
    const t = typedValue(value);
    out.prop_keys.push(key);
    out.prop_types.push(t.type);
    out.prop_nums.push(t.num);
    out.prop_strs.push(t.str);
    out.prop_canon.push(t.canon);
    const elems = Array.isArray(value) ? value.map(typedValue) : [];
    out.prop_elem_types.push(elems.map((e) => e.type));
    out.prop_elem_nums.push(elems.map((e) => e.num));
    out.prop_elem_strs.push(elems.map((e) => e.str));
    out.prop_elem_canon.push(elems.map((e) => e.canon));
  }
  return out;
}

/**
 * Looking up a user-supplied string in a plain object. `key in obj` and `obj[key]` also see
 * Object.prototype, so `"toString"`, `"constructor"` or `"__proto__"` sent as a schedule, a
 * media type or a header name would "match" a function instead of nothing. Every table indexed by
 * user input goes through these.
 */

/** Whether `key` is one of the object's own properties (never an inherited one). */
export function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** The object's own property `key`, or undefined (never an inherited one). */
export function ownValue<V>(obj: Readonly<Record<string, V>>, key: string): V | undefined {
  return hasOwn(obj, key) ? obj[key] : undefined;
}

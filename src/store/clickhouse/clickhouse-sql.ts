/**
 * SQL literals for ClickHouse. 18.16 has no server-side query parameters (`{name:Type}` arrives
 * as an unknown setting `param_name`), so every value is inlined as a literal built here, and
 * only here. Pure.
 */

/** A string literal: backslash and quote escaped, as ClickHouse's lexer expects. */
export function str(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** An integer literal; anything else is a programming error, not input to pass through. */
export function int(value: number | bigint): string {
  if (typeof value === 'bigint') return value.toString();
  if (!Number.isSafeInteger(value)) throw new Error(`not a safe integer: ${value}`);
  return String(value);
}

const MIN_NORMAL = 2.2250738585072014e-308;

/** A Float64 literal; a where expression can compute Infinity (`1e999`) or NaN, which 18.16 reads from strings. */
export function float(value: number): string {
  if (Number.isNaN(value)) return "toFloat64('nan')";
  if (!Number.isFinite(value)) return value > 0 ? "toFloat64('inf')" : "toFloat64('-inf')";
  // 18.16's lexer refuses subnormal literals (`5e-324`: a syntax error) and parses them from
  // strings inexactly: the exact bits instead.
  if (value !== 0 && Math.abs(value) < MIN_NORMAL) {
    const bits = Buffer.alloc(8);
    bits.writeDoubleLE(value);
    return `reinterpretAsFloat64(unhex('${bits.toString('hex')}'))`;
  }
  // toFloat64 keeps integral values from becoming UInt64/Int64 literals (type clashes in if()).
  return `toFloat64(${String(value)})`;
}

/** An identifier (database or table name); only plain names are accepted. */
export function ident(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${name}`);
  return name;
}

export function list(items: readonly string[]): string {
  return `(${items.join(', ')})`;
}

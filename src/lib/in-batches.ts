/**
 * An async source in arrays of at most `size` (the last may be shorter), each item passed
 * through `map` on the way, so a caller that converts every item does not add a generator (and
 * an await per item) of its own. When the source fails, the items taken since the last array are
 * handed out before the error if `keepOnError` says so.
 */
export async function* inBatches<S, T = S>(
  source: AsyncIterable<S>,
  size: number,
  options: { map?: (item: S) => T; keepOnError?: (err: unknown) => boolean } = {},
): AsyncGenerator<T[]> {
  const map = options.map ?? ((item: S) => item as unknown as T);
  let batch: T[] = [];
  try {
    for await (const item of source) {
      batch.push(map(item));
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
  } catch (err) {
    if (batch.length > 0 && options.keepOnError?.(err)) yield batch;
    throw err;
  }
  if (batch.length > 0) yield batch;
}

/**
 * A connector's rows in arrays of at most `size`: the shape every sync commits in, whether the
 * rows are events (prepared on the way), profiles or a mirror's.
 */
import { WarehouseReadAborted, type ConnectorContext, type ReadSpec, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';

/** The rows of `spec` in arrays of at most `size` (the connector's own batches where it has them). */
export async function* rowBatches(connector: WarehouseConnector, spec: ReadSpec, size: number, ctx: ConnectorContext): AsyncIterable<Row[]> {
  if (connector.streamBatches) {
    yield* connector.streamBatches(spec, ctx, size);
    return;
  }
  let batch: Row[] = [];
  try {
    for await (const row of connector.stream(spec, ctx)) {
      batch.push(row);
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
  } catch (err) {
    // Rows read before an abort are still handed out (and committed) before the abort surfaces.
    if (err instanceof WarehouseReadAborted && batch.length > 0) yield batch;
    throw err;
  }
  if (batch.length > 0) yield batch;
}

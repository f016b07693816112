/**
 * A connector's rows in arrays of at most `size`: the shape every sync commits in, whether the
 * rows are events (prepared on the way), profiles or a mirror's.
 */
import { inBatches } from '../lib/in-batches.js';
import { WarehouseReadAborted, type ConnectorContext, type ReadSpec, type Row, type WarehouseConnector } from '../../connectors/warehouse.js';

/** The rows of `spec` in arrays of at most `size` (the connector's own batches where it has them). */
export async function* rowBatches(connector: WarehouseConnector, spec: ReadSpec, size: number, ctx: ConnectorContext): AsyncIterable<Row[]> {
  if (connector.streamBatches) {
    yield* connector.streamBatches(spec, ctx, size);
    return;
  }
  // Rows read before an abort are still handed out (and committed) before the abort surfaces.
  yield* inBatches(connector.stream(spec, ctx), size, { keepOnError: (err) => err instanceof WarehouseReadAborted });
}

/**
 * Stores whose rows are cheaper to encode where the properties are still objects name their
 * encoder here; the /import worker receives the name (functions do not cross threads) and fills
 * EventRows.encoded with it.
 */
import type { RowEncoder } from './event-rows.js';
import { encodeClickHouseRow } from './clickhouse/clickhouse-rows.js';

export const ROW_ENCODERS = { clickhouse: encodeClickHouseRow } satisfies Record<string, RowEncoder>;

export type RowEncoding = keyof typeof ROW_ENCODERS;

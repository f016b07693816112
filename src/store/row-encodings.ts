/**
 * Stores whose rows are cheaper to encode where the properties are still objects name their
 * encoder here; the /import worker receives the name (functions do not cross threads), makes an
 * encoder per batch and fills EventRows.encoded with it.
 */
import type { RowEncoder } from './event-rows.js';
import { clickHouseRowEncoder } from './clickhouse/clickhouse-rows.js';

export const ROW_ENCODERS = { clickhouse: clickHouseRowEncoder } satisfies Record<string, () => RowEncoder>;

export type RowEncoding = keyof typeof ROW_ENCODERS;

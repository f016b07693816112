/** Small readers shared by the event ingestion routers. */
import type { Config } from '../../../config/index.js';
import type { EventLimits } from '../../domain/event-record.js';

/** `1`/`true` → true; anything else (absent, `0`) → false. Repeated parameters: the first. */
export function flag(value: unknown): boolean {
  const v = Array.isArray(value) ? value[0] : value;
  return v === '1' || v === 'true';
}

/** The per-request and per-event limits of event ingestion (events, bytes, properties, nesting), from config. */
export function eventLimitsOf(config: Config): EventLimits {
  return {
    maxEventBytes: config.IMPORT_MAX_EVENT_BYTES,
    maxProperties: config.IMPORT_MAX_PROPERTIES,
    maxDepth: config.IMPORT_MAX_DEPTH,
  };
}

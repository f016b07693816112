import type { Knex } from 'knex';
import * as m001 from './001-foundation.js';
import * as m002 from './002-batch-imports.js';
import * as m003 from './003-warehouse.js';
import * as m004 from './004-migrations.js';
import * as m005 from './005-experiments.js';
import * as m006 from './006-events-time-id-index.js';
import * as m007 from './007-run-partitions.js';
import * as m008 from './008-event-store-identity.js';
import * as m009 from './009-migration-day-workers.js';
import * as m010 from './010-mirror.js';
import * as m011 from './011-identity-links-user-index.js';
import * as m012 from './012-experiments-listing-order.js';
import * as m013 from './013-run-workers.js';
import * as m014 from './014-events-distinct-id-text.js';
import * as m015 from './015-mirror-row-properties.js';

/**
 * Every migration, by name. Names sort in apply order; append new ones with the next number.
 */
export const migrations: Record<string, Knex.Migration> = {
  '001-foundation': m001,
  '002-batch-imports': m002,
  '003-warehouse': m003,
  '004-migrations': m004,
  '005-experiments': m005,
  '006-events-time-id-index': m006,
  '007-run-partitions': m007,
  '008-event-store-identity': m008,
  '009-migration-day-workers': m009,
  '010-mirror': m010,
  '011-identity-links-user-index': m011,
  '012-experiments-listing-order': m012,
  '013-run-workers': m013,
  '014-events-distinct-id-text': m014,
  '015-mirror-row-properties': m015,
};

import type { Config } from '../../config/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import type { Db } from '../db/knex.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secrets.js';
import type { EventStore } from '../store/event-store.js';
import type { JobQueues } from '../queue/queues.js';

/** A dependency's readiness check, for /readyz. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

/** Everything the web process hands to createApp; wired in src/bin only. */
export interface AppDeps {
  config: Config;
  db: Db;
  /** Every read and write of events goes through it (src/store). */
  events: EventStore;
  log: Logger;
  auth: Authenticator;
  secrets: SecretBox;
  queues: JobQueues;
  readiness: ReadinessCheck[];
}

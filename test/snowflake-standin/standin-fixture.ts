/**
 * A Snowflake stand-in ready for tests: a temp SQLite file for tables (write fixtures with `db`,
 * Snowflake type names in the DDL), the stand-in serving it, a password user and a key-pair user,
 * and the source config / server config that point a snowflake source at it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { startSnowflakeStandin, type StandinOptions, type StandinStats } from './standin.server.js';
import { startStandinProcess } from './standin-process.js';

export const STANDIN_ACCOUNT = 'standin-acct';
export const STANDIN_USER = 'LOADER';
export const STANDIN_PASSWORD = 'loader-secret-pw';
export const STANDIN_KEY_USER = 'KEY_LOADER';
export const STANDIN_KEY_PASSPHRASE = 'key-passphrase';

export interface SnowflakeFixture {
  url: string;
  dbPath: string;
  /** Write access to the tables the stand-in serves. */
  db: Database.Database;
  /** Encrypted PKCS#8 private key of STANDIN_KEY_USER (passphrase STANDIN_KEY_PASSPHRASE). */
  privateKeyPem: string;
  /** Server config the source needs (the stand-in's origin allowed as access_url). */
  serverConfig: { SNOWFLAKE_ALLOWED_ACCESS_URLS: string; SNOWFLAKE_CONNECT_TIMEOUT_MS: number };
  /** A password source config for the stand-in; `overrides` replace fields (undefined removes). */
  sourceConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  stats(): Promise<StandinStats>;
  close(): Promise<void>;
}

let cachedKeys: { publicKeyPem: string; privateKeyPem: string } | undefined;

function keyPair() {
  if (!cachedKeys) {
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    cachedKeys = {
      publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }) as string,
      privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: STANDIN_KEY_PASSPHRASE }) as string,
    };
  }
  return cachedKeys;
}

export async function createSnowflakeFixture(
  opts: { childProcess?: boolean } & Partial<Pick<StandinOptions, 'inlineRows' | 'chunkRows' | 'inProgressAfterMs'>> = {},
): Promise<SnowflakeFixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sf-standin-'));
  const dbPath = path.join(dir, 'warehouse.sqlite');
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  const keys = keyPair();
  const options: StandinOptions = {
    dbPath,
    account: STANDIN_ACCOUNT,
    users: [
      { username: STANDIN_USER, password: STANDIN_PASSWORD, roles: ['LOADER', 'PUBLIC'] },
      { username: STANDIN_KEY_USER, publicKeyPem: keys.publicKeyPem, roles: ['LOADER'], defaultWarehouse: 'COMPUTE_WH' },
    ],
    warehouses: ['COMPUTE_WH'],
    database: 'ANALYTICS',
    schema: 'PUBLIC',
    inlineRows: opts.inlineRows,
    chunkRows: opts.chunkRows,
    inProgressAfterMs: opts.inProgressAfterMs,
  };
  const running = opts.childProcess ? await startStandinProcess(options) : await startSnowflakeStandin(options);
  const url = running.url;
  return {
    url,
    dbPath,
    db,
    privateKeyPem: keys.privateKeyPem,
    serverConfig: { SNOWFLAKE_ALLOWED_ACCESS_URLS: url, SNOWFLAKE_CONNECT_TIMEOUT_MS: 20_000 },
    sourceConfig: (overrides = {}) => {
      const base: Record<string, unknown> = {
        account: STANDIN_ACCOUNT,
        username: STANDIN_USER,
        password: STANDIN_PASSWORD,
        warehouse: 'COMPUTE_WH',
        database: 'ANALYTICS',
        schema: 'PUBLIC',
        role: 'LOADER',
        access_url: url,
      };
      for (const [k, v] of Object.entries(overrides)) {
        if (v === undefined) delete base[k];
        else base[k] = v;
      }
      return base;
    },
    stats: async () => running.stats(),
    close: async () => {
      await running.close();
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

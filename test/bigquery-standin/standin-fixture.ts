/**
 * A BigQuery stand-in ready for tests: a temp SQLite file for tables (create them with
 * `createTable(name, fields)` using BigQuery REST schemas), the stand-in serving it, a
 * service-account key whose `token_uri` points at the stand-in, and the source config that
 * points a bigquery source at it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { startBigQueryStandin, type BigQueryStandinHandle, type BigQueryStandinOptions } from './standin.server.js';
import { createTable, storedValue, type Field } from './standin-wire.js';

export const BQ_PROJECT = 'standin-project';
export const BQ_DATASET = 'analytics';
export const BQ_LOCATION = 'EU';
export const BQ_EMAIL = 'loader@standin-project.iam.gserviceaccount.com';
export const BQ_NO_JOBS_EMAIL = 'nojobs@standin-project.iam.gserviceaccount.com';
export const BQ_NO_DATA_EMAIL = 'nodata@standin-project.iam.gserviceaccount.com';

export interface BigQueryFixture {
  standin: BigQueryStandinHandle;
  db: Database.Database;
  /** A service-account key JSON (as Google issues it) for `email`, signed with `privateKeyPem`. */
  key(email?: string, privateKeyPem?: string): Record<string, string>;
  /** A source config for the stand-in; `overrides` replace fields (undefined removes). */
  sourceConfig(overrides?: Record<string, unknown>): Record<string, unknown>;
  createTable(name: string, fields: Field[]): void;
  insertRows(name: string, rows: Record<string, unknown>[]): void;
  close(): Promise<void>;
}

let cached: { publicKeyPem: string; privateKeyPem: string } | undefined;
export function rsaKeyPair(): { publicKeyPem: string; privateKeyPem: string } {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }) as string, privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string };
}
function keys() {
  cached ??= rsaKeyPair();
  return cached;
}

export async function createBigQueryFixture(opts: Partial<Pick<BigQueryStandinOptions, 'pageRows' | 'maxWaitMs'>> = {}): Promise<BigQueryFixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bq-standin-'));
  const dbPath = path.join(dir, 'warehouse.sqlite');
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  const k = keys();
  const standin = await startBigQueryStandin({
    dbPath,
    projectId: BQ_PROJECT,
    datasetId: BQ_DATASET,
    location: BQ_LOCATION,
    accounts: [
      { email: BQ_EMAIL, publicKeyPem: k.publicKeyPem },
      { email: BQ_NO_JOBS_EMAIL, publicKeyPem: k.publicKeyPem, jobUser: false },
      { email: BQ_NO_DATA_EMAIL, publicKeyPem: k.publicKeyPem, dataViewer: false },
    ],
    pageRows: opts.pageRows,
    maxWaitMs: opts.maxWaitMs ?? 200,
  });
  const schemas = new Map<string, Field[]>();
  const key = (email = BQ_EMAIL, privateKeyPem = k.privateKeyPem) => ({
    type: 'service_account',
    project_id: BQ_PROJECT,
    private_key_id: crypto.createHash('sha1').update(privateKeyPem).digest('hex'),
    private_key: privateKeyPem,
    client_email: email,
    client_id: '100000000000000000001',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: standin.tokenUri,
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
    universe_domain: 'googleapis.com',
  });
  return {
    standin,
    db,
    key,
    sourceConfig: (overrides = {}) => {
      const base: Record<string, unknown> = {
        project_id: BQ_PROJECT,
        dataset: BQ_DATASET,
        location: BQ_LOCATION,
        credentials_json: JSON.stringify(key()),
        api_endpoint: standin.url,
      };
      for (const [name, v] of Object.entries(overrides)) {
        if (v === undefined) delete base[name];
        else base[name] = v;
      }
      return base;
    },
    createTable: (name, fields) => {
      createTable(db, name, fields);
      schemas.set(name, fields);
    },
    insertRows: (name, rows) => {
      if (rows.length === 0) return;
      const fields = schemas.get(name)!;
      const stmt = db.prepare(`INSERT INTO "${name}" (${fields.map((f) => `"${f.name}"`).join(', ')}) VALUES (${fields.map(() => '?').join(', ')})`);
      db.transaction(() => {
        for (const r of rows) stmt.run(...fields.map((f) => storedValue(f, r[f.name])));
      })();
    },
    close: async () => {
      await standin.close();
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Builds the example warehouse (examples/warehouse.sqlite) from examples/warehouse.sql, replacing
 * any previous copy. Usage: `npx tsx examples/build-warehouse.ts [output.sqlite]`; prints the
 * absolute path to use as a source's `config.path`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(here, 'warehouse.sqlite'));
for (const suffix of ['', '-wal', '-shm']) fs.rmSync(out + suffix, { force: true });
const db = new Database(out);
db.exec(fs.readFileSync(path.join(here, 'warehouse.sql'), 'utf8'));
const count = (t: string) => (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
const summary = ['events', 'users', 'companies', 'plans'].map((t) => `${t}: ${count(t)} rows`).join(', ');
db.close();
process.stdout.write(`${out}\n(${summary})\n`);

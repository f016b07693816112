/**
 * The event-store boundary (issue 13): every reader and writer of events goes through
 * src/store's EventStore. This fails when a file outside src/store queries the events (or
 * identity_links) tables, or reaches into the SQL implementation instead of the interface.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
/** Production code: no SQL on our events tables here outside src/store (tests and benches may name warehouse tables `events`). */
const CODE = ['src', 'jobs', 'connectors', 'config'];
/** Everywhere: nothing reaches past the interface. */
const ALL = [...CODE, 'bench', 'test'];
// Schema changes live with the other migrations; this file names the patterns it looks for.
const ALLOWED = [/^src\/store\//, /^src\/db\/migrations\//, /^test\/unit\/event-store-boundary\.test\.ts$/];

function files(dir: string): string[] {
  const abs = path.join(ROOT, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'fixtures' ? [] : files(rel);
    return /\.(ts|js|mjs)$/.test(e.name) ? [rel] : [];
  });
}

const TABLE_SQL = /\b(FROM|INTO|UPDATE|JOIN|TABLE)\s+["`]?(events|identity_links)\b(?![\w.-])|\(\s*['"](events|identity_links)['"]\s*\)/;
const SQL_STORE_IMPORT = /from\s+['"][^'"]*\/store\/sql\//;
const OLD_REPOS = /from\s+['"][^'"]*\/db\/(events|event-scan|usage)\.repo\.js['"]/;

describe('event store boundary', () => {
  const outside = (dirs: string[]) =>
    dirs
      .flatMap(files)
      .map((f) => f.split(path.sep).join('/'))
      .filter((f) => !ALLOWED.some((re) => re.test(f)));

  it('no SQL on events or identity links outside src/store', () => {
    const offenders = outside(CODE).filter((f) => TABLE_SQL.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('nothing outside src/store imports the SQL store or the old event repositories', () => {
    const offenders = outside(ALL).filter((f) => {
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      return SQL_STORE_IMPORT.test(text) || OLD_REPOS.test(text);
    });
    expect(offenders).toEqual([]);
  });
});

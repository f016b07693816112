/**
 * Which files a SQLite source may name. A source is read with the server's own file access, so
 * the service's own database is always refused (it holds every project's data), and an operator
 * can confine sources to some directories with WAREHOUSE_SQLITE_ALLOWED_DIRS.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/index.js';

/** The path with every symlink and `..` resolved (what would actually be opened). */
export function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function inside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

export type SqlitePathSettings = Pick<Config, 'DATABASE_URL' | 'WAREHOUSE_SQLITE_ALLOWED_DIRS'>;

export function checkSqlitePath(config: { path: string }, settings: SqlitePathSettings): string | undefined {
  const file = real(config.path);
  const own = settings.DATABASE_URL.replace(/^sqlite:(\/\/)?/, '');
  if (!/^postgres(ql)?:\/\//.test(own) && own !== ':memory:' && file === real(own)) {
    return "config.path names this service's own database, which cannot be a warehouse source";
  }
  const allowed = settings.WAREHOUSE_SQLITE_ALLOWED_DIRS.split(',')
    .map((d) => d.trim())
    .filter(Boolean)
    .map(real);
  if (allowed.length > 0 && !allowed.some((dir) => inside(file, dir))) {
    return `config.path must be inside one of the allowed directories (WAREHOUSE_SQLITE_ALLOWED_DIRS): ${allowed.join(', ')}`;
  }
  return undefined;
}

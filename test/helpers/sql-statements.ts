/** The SQL statements a piece of code sends through knex, ready to be explained again. */
import type { Knex } from 'knex';
import type { Db } from '../../src/db/knex.js';

export interface Statement {
  sql: string;
  bindings: Knex.RawBinding[];
}

/** Runs `run` and returns the statements it sent whose SQL matches `pattern`, in order. */
export async function capturedStatements(db: Db, pattern: RegExp, run: () => Promise<void>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const capture = (q: { sql: string; bindings?: Knex.RawBinding[] }) => {
    // knex reports Postgres' numbered placeholders; they are in order, so `?` stands for each again.
    if (pattern.test(q.sql)) statements.push({ sql: q.sql.replace(/\$\d+/g, '?'), bindings: q.bindings ?? [] });
  };
  db.on('query', capture);
  try {
    await run();
  } finally {
    db.off('query', capture);
  }
  return statements;
}

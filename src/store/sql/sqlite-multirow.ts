/**
 * A multi-row INSERT on SQLite: rows go `ROWS_PER_STATEMENT` to a statement step instead of one,
 * which is most of what separates a per-row loop from the bare-insert floor (bench/floors.ts).
 * `.changes` of a multi-row `INSERT … ON CONFLICT DO NOTHING` counts the rows that went in, so
 * dedupe counts stay exact; rows of one statement conflict with each other as they would in a
 * loop (the first wins).
 */
import type Database from 'better-sqlite3';

const ROWS_PER_STATEMENT = 64;

export class SqliteMultiRowInsert {
  private readonly many: Database.Statement;
  private readonly one: Database.Statement;
  private readonly params: unknown[];
  private readonly single: unknown[];

  /** `INSERT INTO t (cols) VALUES` + tuples of `width` placeholders + `tail`. */
  constructor(conn: Database.Database, head: string, private readonly width: number, tail: string) {
    const tuple = `(${Array.from({ length: width }, () => '?').join(', ')})`;
    this.many = conn.prepare(`${head} ${Array.from({ length: ROWS_PER_STATEMENT }, () => tuple).join(', ')} ${tail}`);
    this.one = conn.prepare(`${head} ${tuple} ${tail}`);
    this.params = new Array(ROWS_PER_STATEMENT * width);
    this.single = new Array(width);
  }

  /** Inserts rows 0…count-1, `fill(params, at, i)` writing row i's values from index `at`; returns the rows inserted. */
  run(count: number, fill: (params: unknown[], at: number, i: number) => void): number {
    let changes = 0;
    let i = 0;
    for (; i + ROWS_PER_STATEMENT <= count; i += ROWS_PER_STATEMENT) {
      for (let k = 0; k < ROWS_PER_STATEMENT; k++) fill(this.params, k * this.width, i + k);
      changes += this.many.run(this.params).changes;
    }
    for (; i < count; i++) {
      fill(this.single, 0, i);
      changes += this.one.run(this.single).changes;
    }
    return changes;
  }
}

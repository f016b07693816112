import pg from 'pg';

/** Whether the bench's Postgres answers; Postgres rows are left out (with a note) when it does not. */
export async function pgReachable(url: string | undefined): Promise<boolean> {
  if (!url) return false;
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

/** Whether the bench's ClickHouse answers; its rows are left out (with a note) when it does not. */
export async function clickhouseReachable(url: string | undefined): Promise<boolean> {
  if (!url) return false;
  try {
    const u = new URL(url);
    const res = await fetch(`${u.protocol === 'clickhouses:' ? 'https' : 'http'}://${u.hostname}:${u.port || 8123}/?query=SELECT%201`);
    return res.ok;
  } catch {
    return false;
  }
}

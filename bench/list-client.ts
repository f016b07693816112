/**
 * The experiments bench's client, in its own process so that receiving and decoding the
 * listing (≈10 MB per request) is not counted as the server's work: sequential GETs over one
 * keep-alive connection, each timed from request to the body's last byte.
 */
import http from 'node:http';

interface Job {
  url: string;
  authorization: string;
  /** Measured requests; one more, unmeasured, warms the connection, caches and query plan first. */
  requests: number;
}

export interface ListClientOutcome {
  /** ms per measured request, in order. */
  http: number[];
  bytes: number;
  /** Experiments in the first (unmeasured) answer. */
  count: number;
}

function get(agent: http.Agent, job: Job): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(job.url, { agent, headers: { authorization: job.authorization } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

process.once('message', async (job: Job) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: ListClientOutcome = { http: [], bytes: 0, count: 0 };
  for (let i = 0; i <= job.requests; i++) {
    const started = performance.now();
    const { status, body } = await get(agent, job);
    const ms = performance.now() - started;
    if (status !== 200) throw new Error(`list answered ${status}: ${body.toString('utf8', 0, 200)}`);
    if (i === 0) {
      out.count = (JSON.parse(body.toString('utf8')) as { results: unknown[] }).results.length;
      out.bytes = body.length;
    } else {
      out.http.push(ms);
    }
  }
  agent.destroy();
  process.send!(out, () => process.exit(0));
});

/**
 * The bench's /import clients, in their own process so their CPU and memory are not the
 * server's: gzip all batches first, then `clients` concurrent keep-alive senders drain them.
 */
import http from 'node:http';
import { generateEvents, gzipBatches } from './ingest-data.js';

interface Job {
  url: string;
  authorization: string;
  n: number;
  batch: number;
  clients: number;
  /** Events carry $device_id / $user_id (generateEvents' identity option). */
  identity?: boolean;
  /** Distinct users (ingest-data.ts DEFAULT_USERS when absent). */
  users?: number;
}

function send(agent: http.Agent, job: Job, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      job.url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length, authorization: job.authorization },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

process.once('message', async (job: Job) => {
  const bodies = gzipBatches(generateEvents(job.n, 42, job.identity, job.users), job.batch);
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.clients });
  let next = 0;
  let failures = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: job.clients }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const res = await send(agent, job, body);
        if (res.status !== 200) {
          failures += 1;
          firstError ??= `${res.status} ${res.text.slice(0, 300)}`;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  process.send!({ seconds, failures, firstError }, () => process.exit(0));
});

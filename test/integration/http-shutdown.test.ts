/**
 * Graceful shutdown of the HTTP listener (src/http/server.ts) with keep-alive clients: a request
 * in flight when close() starts finishes, is answered with `Connection: close`, and close()
 * resolves once it is done instead of waiting for the client to hang up.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { listen } from '../../src/http/server.js';

const agents: http.Agent[] = [];
afterEach(() => {
  for (const a of agents.splice(0)) a.destroy();
});

function get(port: number, agent: http.Agent, path: string): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
      })
      .on('error', reject);
  });
}

const config = { PORT: 0, HOST: '127.0.0.1', TLS_CERT_FILE: undefined, TLS_KEY_FILE: undefined };

describe('HTTP shutdown with keep-alive connections', () => {
  it.each([
    ['before its headers are sent', false],
    ['after its headers are sent (a streamed answer)', true],
  ])('a request in flight %s finishes and close() does not wait for the idle socket', async (_label, streamHeadersFirst) => {
    let arrived!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    let finish!: () => void;
    const release = new Promise<void>((r) => (finish = r));
    const server = await listen((req, res) => {
      if (req.url === '/slow') {
        if (streamHeadersFirst) res.writeHead(200, { 'content-type': 'text/plain' }).write('part ');
        arrived();
        void release.then(() => res.end('done'));
      } else res.end('fast');
    }, config);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    agents.push(agent);
    // One idle keep-alive socket, and one with a request in flight.
    expect((await get(server.port, agent, '/fast')).body).toBe('fast');
    const slow = get(server.port, agent, '/slow');
    await inFlight;

    const started = Date.now();
    const closed = server.close();
    setTimeout(finish, 200);
    const answer = await slow;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/done$/);
    if (!streamHeadersFirst) expect(answer.connection).toBe('close');
    await closed;
    // Without the fix close() waits for the client's socket (here the agent's, open until destroyed).
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('names the variable when the certificate file is missing, and PORT when it is taken', async () => {
    await expect(listen(() => {}, { ...config, TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' })).rejects.toThrow(
      /^TLS_CERT_FILE: cannot read \/nonexistent\/cert\.pem/,
    );
    const first = await listen(() => {}, config);
    try {
      await expect(listen(() => {}, { ...config, PORT: first.port })).rejects.toThrow(new RegExp(`^PORT ${first.port} on HOST 127.0.0.1: already in use`));
    } finally {
      await first.close();
    }
  });
});

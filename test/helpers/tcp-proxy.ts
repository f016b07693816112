/**
 * A TCP proxy in front of a real server (PostgreSQL, ClickHouse) that a test can take down and
 * bring back: down cuts every open connection and stops listening, so new connections are
 * refused — what the service sees when that server stops — without stopping a server that other
 * tests share.
 */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Cuts every connection and refuses new ones until up(). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;

  const listen = async (): Promise<void> => {
    const s = net.createServer((client) => {
      const upstream = net.connect(target.port, target.host);
      for (const sock of [client, upstream]) {
        sockets.add(sock);
        sock.on('close', () => sockets.delete(sock));
        sock.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    port = (s.address() as net.AddressInfo).port;
    server = s;
  };

  const down = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    down,
    up: async () => {
      if (!server) await listen();
    },
    close: down,
  };
}

/**
 * Writing a long text response with back-pressure (the export's NDJSON, a listing's JSON): one
 * write per page, and when the socket (or the gzip stream in front of it) is full we wait for
 * 'drain' before producing the next page. Optional gzip when the client asks for it, as
 * Mixpanel's export does.
 */
import { pipeline, type Writable } from 'node:stream';
import zlib from 'node:zlib';
import type { Request, Response } from 'express';

/** True when Accept-Encoding allows gzip (and does not give it q=0). */
export function acceptsGzip(req: Request): boolean {
  const header = req.headers['accept-encoding'];
  if (typeof header !== 'string') return false;
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name !== 'gzip' && name !== 'x-gzip') return false;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
    return !q || Number(q[1]) > 0;
  });
}

export class TextStreamWriter {
  private stream?: Writable;
  private readonly closed: Promise<void>;
  private isClosed = false;

  constructor(
    private readonly res: Response,
    private readonly options: { gzip: boolean; onError: (err: unknown) => void },
  ) {
    this.closed = new Promise((resolve) =>
      res.once('close', () => {
        this.isClosed = true;
        resolve();
      }),
    );
  }

  /**
   * The body's stream, opened at the first write: until then an error may still be answered
   * with an ordinary error response, without a Content-Encoding its plain body does not have.
   */
  private opened(): Writable {
    if (this.stream) return this.stream;
    if (!this.options.gzip) return (this.stream = this.res);
    this.res.setHeader('content-encoding', 'gzip');
    this.res.setHeader('vary', 'Accept-Encoding');
    const gz = zlib.createGzip();
    pipeline(gz, this.res, (err) => {
      if (err) this.options.onError(err);
    });
    return (this.stream = gz);
  }

  /** The client went away (or the response was destroyed): stop producing. */
  get gone(): boolean {
    return this.isClosed || this.res.destroyed;
  }

  /** Writes one chunk; resolves once the stream can take more (or the client is gone). */
  async write(chunk: string): Promise<void> {
    if (this.gone) return;
    const out = this.opened();
    if (out.write(chunk)) return;
    await Promise.race([new Promise<void>((resolve) => out.once('drain', resolve)), this.closed]);
  }

  end(): void {
    if (!this.gone) this.opened().end();
  }
}

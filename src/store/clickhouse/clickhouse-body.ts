/**
 * The body of one JSONEachRow INSERT as UTF-8 chunks of about 1 MB, written piece by piece: a
 * row's stamp (`rowHead`) and its event fields go into the chunk one after the other, so no line
 * string is ever built. Joining line strings made ropes that the HTTP request flattened, measured
 * and encoded again: in a profile of `POST /import` into ClickHouse the web thread spent ~8 µs
 * per event in `Buffer.byteLength` of those chunks alone (docs/performance.md).
 *
 * Chunks are reused once their INSERT has been answered (the server has then read every byte):
 * a fresh megabyte per chunk is memory outside V8's heap, which made V8 collect more often
 * (measured on PostgreSQL's COPY text, pg-copy.ts).
 */
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 10;
const spare: Buffer[] = [];
const MAX_SPARE = 32;

export class JsonLinesBody {
  private readonly full: Buffer[] = [];
  private buf: Buffer | undefined;
  private at = 0;
  /** Lines written. */
  lines = 0;

  /** Appends `head + fields + "\n"` (a row: its stamp, then its event fields). */
  row(head: string, fields: string): void {
    const buf = this.room((head.length + fields.length) * 3 + 1);
    this.at += buf.write(head, this.at);
    this.at += buf.write(fields, this.at);
    buf[this.at++] = NEWLINE;
    this.lines++;
  }

  /** Appends a whole line (already ending in "\n"). */
  line(text: string): void {
    const buf = this.room(text.length * 3);
    this.at += buf.write(text, this.at);
    this.lines++;
  }

  /** The body so far, in order. */
  chunks(): Buffer[] {
    return this.buf && this.at > 0 ? [...this.full, this.buf.subarray(0, this.at)] : [...this.full];
  }

  /** Gives the chunks back for later bodies: only once the INSERT that sent them has been answered. */
  release(): void {
    for (const b of [...this.full, this.buf]) {
      if (b && b.buffer.byteLength === CHUNK_BYTES && spare.length < MAX_SPARE) spare.push(Buffer.from(b.buffer, 0, CHUNK_BYTES));
    }
    this.full.length = 0;
    this.buf = undefined;
    this.at = 0;
  }

  /** The current chunk, with at least `bytes` free (UTF-8 takes at most 3 bytes per UTF-16 unit). */
  private room(bytes: number): Buffer {
    if (this.buf && this.at + bytes <= this.buf.length) return this.buf;
    if (this.buf && this.at > 0) this.full.push(this.buf.subarray(0, this.at));
    // Never node's shared pool (allocUnsafe slices one block for small sizes): a chunk is reused whole.
    this.buf = bytes <= CHUNK_BYTES ? (spare.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES)) : Buffer.allocUnsafeSlow(bytes);
    this.at = 0;
    return this.buf;
  }
}

/**
 * A request body (a ClickHouse INSERT, a PostgreSQL COPY): text written as UTF-8, or bytes,
 * straight into chunks of about 1 MB, piece by piece. The alternative, strings joined from
 * per-row template strings, makes ropes that the socket write flattens, measures and encodes
 * again: in a profile of `POST /import` into ClickHouse the web thread spent ~8 µs per event
 * in `Buffer.byteLength` of such chunks alone (docs/performance.md, ninth session).
 *
 * Chunks are reused once the statement that sent them has been answered (the server has then
 * read every byte). A fresh megabyte per chunk is memory outside V8's heap, and allocating that
 * much of it made V8 collect more often: PostgreSQL COPY text in a new buffer per batch was
 * slower than the strings it replaced in 5 of 5 service pairs, in reused buffers faster in 4 of 5.
 */
const CHUNK_BYTES = 1 << 20;
const spare: Buffer[] = [];
const MAX_SPARE = 32;

export class Utf8Chunks {
  private readonly full: Buffer[] = [];
  private buf: Buffer | undefined;
  private at = 0;

  /** Appends `text`, then the byte `end` when given (a separator such as a tab or a newline). */
  write(text: string, end?: number): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit; +1 for `end`.
    const buf = this.room(text.length * 3 + 1);
    this.at += buf.write(text, this.at);
    if (end !== undefined) buf[this.at++] = end;
  }

  /** Appends bytes as they are (a RowBinary row). */
  bytes(b: Uint8Array): void {
    const buf = this.room(b.length);
    buf.set(b, this.at);
    this.at += b.length;
  }

  /** Bytes written so far. */
  get byteLength(): number {
    let n = this.at;
    for (const b of this.full) n += b.length;
    return n;
  }

  /** The text so far, in order. */
  chunks(): Buffer[] {
    return this.buf && this.at > 0 ? [...this.full, this.buf.subarray(0, this.at)] : [...this.full];
  }

  /** Gives the chunks back for later use: only once the statement that sent them has been answered, never after a failure. */
  release(): void {
    for (const b of [...this.full, this.buf]) {
      if (b && b.buffer.byteLength === CHUNK_BYTES && spare.length < MAX_SPARE) spare.push(Buffer.from(b.buffer, 0, CHUNK_BYTES));
    }
    this.full.length = 0;
    this.buf = undefined;
    this.at = 0;
  }

  /** The current chunk, with at least `bytes` free. */
  private room(bytes: number): Buffer {
    if (this.buf && this.at + bytes <= this.buf.length) return this.buf;
    if (this.buf && this.at > 0) this.full.push(this.buf.subarray(0, this.at));
    // Never node's shared pool (allocUnsafe slices one block for small sizes): a chunk is reused whole.
    this.buf = bytes <= CHUNK_BYTES ? (spare.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES)) : Buffer.allocUnsafeSlow(bytes);
    this.at = 0;
    return this.buf;
  }
}

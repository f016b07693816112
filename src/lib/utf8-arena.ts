/**
 * An append-only list of strings kept as UTF-8 bytes in large blocks. Holding a million short
 * strings as JS strings costs over twice their text in heap; here they cost their bytes plus a
 * few bytes each, which is what lets a big upload be checked whole before anything is written.
 */
const BLOCK_BYTES = 1024 * 1024;

export class Utf8Arena {
  private readonly blocks: Buffer[] = [];
  /** Per item: its block and its end offset there (the start is the previous item's end, or 0). */
  private readonly blockOf: number[] = [];
  private readonly endOf: number[] = [];
  private used = 0;

  get length(): number {
    return this.endOf.length;
  }

  push(text: string): void {
    const bytes = Buffer.byteLength(text, 'utf8');
    let block = this.blocks[this.blocks.length - 1];
    if (!block || this.used + bytes > block.length) {
      block = Buffer.allocUnsafe(Math.max(BLOCK_BYTES, bytes));
      this.blocks.push(block);
      this.used = 0;
    }
    block.write(text, this.used, 'utf8');
    this.used += bytes;
    this.blockOf.push(this.blocks.length - 1);
    this.endOf.push(this.used);
  }

  get(index: number): string {
    const block = this.blockOf[index]!;
    const start = index > 0 && this.blockOf[index - 1] === block ? this.endOf[index - 1]! : 0;
    return this.blocks[block]!.toString('utf8', start, this.endOf[index]);
  }

  *[Symbol.iterator](): Generator<string> {
    for (let i = 0; i < this.length; i++) yield this.get(i);
  }
}

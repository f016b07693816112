/**
 * Byte-level splitters for uploaded files, fed chunk by chunk so a file of any size is read in
 * bounded memory. They work on bytes, not strings: every byte that matters here (`[ ] { } " \ ,`
 * and newline) is ASCII, and no byte of a multi-byte UTF-8 sequence is ever ASCII, so a chunk
 * boundary inside a character is harmless. Pure: no IO.
 */

const NL = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_SQ = 0x5b;
const CLOSE_SQ = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;

function isWs(b: number): boolean {
  return b === 0x20 || b === NL || b === CR || b === 0x09;
}

const BOM = [0xef, 0xbb, 0xbf];

/** A UTF-8 byte order mark some editors put at the start of a file. */
function stripBom(chunk: Buffer): Buffer {
  return chunk.length >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? chunk.subarray(3) : chunk;
}

/**
 * A record longer than the splitter's cap: thrown as soon as the cap is passed, while streaming,
 * so a 1 GB line or array element is never buffered whole. `index` is the record's 0-based
 * position in the file.
 */
export class RecordTooLargeError extends Error {
  constructor(
    readonly index: number,
    readonly maxBytes: number,
  ) {
    super(`record ${index} is larger than ${maxBytes} bytes`);
    this.name = 'RecordTooLargeError';
  }
}

/** NDJSON: one record per line; blank lines are not records; `\r\n` is accepted. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private first = true;
  private records = 0;

  /** @param maxRecordBytes longest line kept (RecordTooLargeError beyond); default unlimited. */
  constructor(private readonly maxRecordBytes = Infinity) {}

  push(input: Buffer): Buffer[] {
    let chunk = input;
    if (this.first && chunk.length > 0) {
      chunk = stripBom(chunk);
      this.first = false;
    }
    const out: Buffer[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NL, start); nl !== -1; nl = chunk.indexOf(NL, start)) {
      const piece = chunk.subarray(start, nl);
      this.check(this.partsBytes + piece.length);
      const line = this.parts.length > 0 ? Buffer.concat([...this.parts, piece]) : piece;
      this.parts = [];
      this.partsBytes = 0;
      this.emit(line, out);
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.check(this.partsBytes + chunk.length - start);
      this.parts.push(Buffer.from(chunk.subarray(start)));
      this.partsBytes += chunk.length - start;
    }
    return out;
  }

  end(): Buffer[] {
    const out: Buffer[] = [];
    if (this.parts.length > 0) this.emit(Buffer.concat(this.parts), out);
    this.parts = [];
    this.partsBytes = 0;
    return out;
  }

  /** A line (with its surrounding whitespace, which is trimmed later) over the cap. */
  private check(bytes: number): void {
    if (bytes > this.maxRecordBytes) throw new RecordTooLargeError(this.records, this.maxRecordBytes);
  }

  private emit(line: Buffer, out: Buffer[]): void {
    let end = line.length;
    while (end > 0 && isWs(line[end - 1]!)) end -= 1;
    let start = 0;
    while (start < end && isWs(line[start]!)) start += 1;
    if (end > start) {
      out.push(line.subarray(start, end));
      this.records += 1;
    }
  }
}

export class JsonArrayError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at byte ${offset}`);
    this.name = 'JsonArrayError';
  }
}

type State = 'start' | 'first' | 'element' | 'in-element' | 'after' | 'done';

/**
 * A top-level JSON array, split into the raw bytes of its elements without parsing them (each
 * element is parsed on its own later, so one bad record is a rejection, not a failed file).
 * Structural errors — not an array, a missing comma, text after the closing bracket, an
 * unterminated array — throw JsonArrayError with the byte offset.
 */
export class JsonArraySplitter {
  private state: State = 'start';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private offset = 0;
  private records = 0;

  /** @param maxRecordBytes longest element kept (RecordTooLargeError beyond); default unlimited. */
  constructor(private readonly maxRecordBytes = Infinity) {}

  push(input: Buffer): Buffer[] {
    const chunk = input;
    const out: Buffer[] = [];
    let elementStart = this.state === 'in-element' ? 0 : -1;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.state === 'in-element') {
        if (this.inString) {
          i = this.skipString(chunk, i);
          if (!this.inString && this.depth === 0) {
            // A string element is complete at its closing quote.
            this.finishElement(chunk.subarray(elementStart, i), out, this.offset + i);
            elementStart = -1;
            this.state = 'after';
          }
          continue;
        }
        const b = chunk[i]!;
        if (b === QUOTE) this.inString = true;
        else if (b === OPEN_CURLY || b === OPEN_SQ) this.depth += 1;
        else if (b === CLOSE_CURLY || (b === CLOSE_SQ && this.depth > 0)) {
          this.depth -= 1;
          if (this.depth < 0) throw new JsonArrayError('unbalanced closing brace', this.offset + i);
          if (this.depth === 0) {
            // An object or array element is complete at its closing bracket.
            this.finishElement(chunk.subarray(elementStart, i + 1), out, this.offset + i);
            elementStart = -1;
            this.state = 'after';
          }
        } else if (this.depth === 0 && (b === COMMA || b === CLOSE_SQ)) {
          this.finishElement(chunk.subarray(elementStart, i), out, this.offset + i);
          elementStart = -1;
          this.state = b === COMMA ? 'element' : 'done';
        }
        i += 1;
        continue;
      }
      const b = chunk[i]!;
      if (isWs(b)) {
        i += 1;
        continue;
      }
      switch (this.state) {
        case 'start':
          if (this.offset + i < 3 && b === BOM[this.offset + i]) break; // a byte order mark, even split across chunks
          if (b !== OPEN_SQ) throw new JsonArrayError('a JSON array must start with [', this.offset + i);
          this.state = 'first';
          break;
        case 'first':
          if (b === CLOSE_SQ) {
            this.state = 'done';
            break;
          }
          this.beginElement(b);
          elementStart = i;
          break;
        case 'element':
          if (b === COMMA || b === CLOSE_SQ) throw new JsonArrayError('empty array element', this.offset + i);
          this.beginElement(b);
          elementStart = i;
          break;
        case 'after':
          if (b === COMMA) this.state = 'element';
          else if (b === CLOSE_SQ) this.state = 'done';
          else throw new JsonArrayError("expected ',' or ']' after an array element", this.offset + i);
          break;
        case 'done':
          throw new JsonArrayError('unexpected text after the closing ]', this.offset + i);
        default:
          break;
      }
      i += 1;
    }
    if (this.state === 'in-element' && elementStart >= 0) {
      const kept = chunk.length - elementStart;
      if (this.partsBytes + kept > this.maxRecordBytes) throw new RecordTooLargeError(this.records, this.maxRecordBytes);
      this.parts.push(Buffer.from(chunk.subarray(elementStart)));
      this.partsBytes += kept;
    }
    this.offset += chunk.length;
    return out;
  }

  /** Throws unless the array was closed; every element has been returned by then. */
  end(): Buffer[] {
    if (this.state !== 'done') throw new JsonArrayError('the JSON array is not closed (truncated file?)', this.offset);
    return [];
  }

  private beginElement(b: number): void {
    this.state = 'in-element';
    this.depth = 0;
    if (b === QUOTE) this.inString = true;
    else if (b === OPEN_CURLY || b === OPEN_SQ) this.depth = 1;
  }

  private finishElement(tail: Buffer, out: Buffer[], at: number): void {
    if (this.partsBytes + tail.length > this.maxRecordBytes) throw new RecordTooLargeError(this.records, this.maxRecordBytes);
    let el = this.parts.length > 0 ? Buffer.concat([...this.parts, tail]) : tail;
    this.parts = [];
    this.partsBytes = 0;
    this.records += 1;
    let end = el.length;
    while (end > 0 && isWs(el[end - 1]!)) end -= 1;
    el = el.subarray(0, end);
    if (el.length === 0) throw new JsonArrayError('empty array element', at);
    out.push(el);
  }

  /** Inside a string: jump to the closing quote with indexOf, counting escapes. */
  private skipString(chunk: Buffer, from: number): number {
    let i = from;
    if (this.escaped) {
      this.escaped = false;
      i += 1;
    }
    for (;;) {
      const q = chunk.indexOf(QUOTE, i);
      if (q === -1) {
        let k = 0;
        for (let j = chunk.length - 1; j >= i && chunk[j] === BACKSLASH; j--) k += 1;
        this.escaped = k % 2 === 1;
        return chunk.length;
      }
      let k = 0;
      for (let j = q - 1; j >= i && chunk[j] === BACKSLASH; j--) k += 1;
      if (k % 2 === 0) {
        this.inString = false;
        return q + 1;
      }
      i = q + 1;
    }
  }
}

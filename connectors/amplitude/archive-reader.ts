/**
 * Reads an Amplitude export archive from disk: a zip whose entries are gzipped NDJSON files
 * (`<project>/<project>_<YYYY-MM-DD>_<H>#<n>.json.gz`). Entries are opened one at a time and
 * streamed through gunzip, so memory holds one batch of lines whatever the archive's size.
 *
 * A record is a non-empty line (a trailing CR is not content). Counting and reading agree on
 * that, so a dry run's count is the number of records a load reads.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import yauzl from 'yauzl';

export interface LineBatch {
  entry: string;
  /** 0-based record number (within the entry) of `lines[0]`. */
  firstLine: number;
  lines: string[];
  /** True on the last batch of an entry (possibly with no lines). */
  entryEnd: boolean;
}

/** Where to resume: entries already done, and records already done in one entry. */
export interface ReadPosition {
  entriesDone?: ReadonlySet<string>;
  entry?: string;
  line?: number;
}

export interface ReadOptions {
  from?: ReadPosition;
  /** Lines per yielded batch. */
  batchLines?: number;
  signal?: AbortSignal;
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip!)));
  });
}

/** Iterates a zip's file entries in central-directory order. */
async function* entriesOf(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  for (;;) {
    const entry = await new Promise<yauzl.Entry | null>((resolve, reject) => {
      const onEntry = (e: yauzl.Entry) => done(null, e);
      const onEnd = () => done(null, null);
      const onError = (err: Error) => done(err, null);
      const done = (err: Error | null, e: yauzl.Entry | null) => {
        zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
        if (err) reject(err);
        else resolve(e);
      };
      zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
      zip.readEntry();
    });
    if (!entry) return;
    if (entry.fileName.endsWith('/')) continue;
    yield entry;
  }
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) return reject(err);
      // Amplitude's entries are gzip files; anything else is read as plain NDJSON.
      resolve(entry.fileName.endsWith('.gz') ? stream.pipe(zlib.createGunzip({ chunkSize: 256 * 1024 })) : stream);
    });
  });
}

/** Streams the archive's records in batches, from a resume position if given. */
export async function* readArchiveLines(file: string, options: ReadOptions = {}): AsyncGenerator<LineBatch> {
  const batchLines = options.batchLines ?? 2000;
  const from = options.from ?? {};
  const zip = await openZip(file);
  let stream: Readable | undefined;
  try {
    for await (const entry of entriesOf(zip)) {
      const name = entry.fileName;
      if (from.entriesDone?.has(name)) continue;
      let skip = from.entry === name ? (from.line ?? 0) : 0;
      stream = await openEntry(zip, entry);
      const decoder = new StringDecoder('utf8');
      let pending = '';
      let lineNo = 0;
      let batch: string[] = [];
      let batchStart = 0;
      const take = (raw: string) => {
        const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
        if (line.length === 0) return;
        if (skip > 0) {
          skip -= 1;
          lineNo += 1;
          batchStart = lineNo;
          return;
        }
        batch.push(line);
        lineNo += 1;
      };
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        options.signal?.throwIfAborted();
        const parts = (pending + decoder.write(chunk)).split('\n');
        pending = parts.pop()!;
        for (const p of parts) take(p);
        if (batch.length >= batchLines) {
          yield { entry: name, firstLine: batchStart, lines: batch, entryEnd: false };
          batch = [];
          batchStart = lineNo;
        }
      }
      take(pending + decoder.end());
      stream = undefined;
      yield { entry: name, firstLine: batchStart, lines: batch, entryEnd: true };
    }
  } finally {
    stream?.destroy();
    zip.close();
  }
}

/** Counts the archive's records without decoding them as text. */
export async function countArchiveRecords(file: string, signal?: AbortSignal): Promise<{ entries: number; records: number }> {
  const zip = await openZip(file);
  let entries = 0;
  let records = 0;
  try {
    for await (const entry of entriesOf(zip)) {
      entries += 1;
      const stream = await openEntry(zip, entry);
      // Length of the current line so far, and whether its last byte was a CR.
      let len = 0;
      let lastCr = false;
      const endLine = () => {
        if (len > 1 || (len === 1 && !lastCr)) records += 1;
        len = 0;
        lastCr = false;
      };
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          signal?.throwIfAborted();
          let pos = 0;
          for (;;) {
            const nl = chunk.indexOf(10, pos);
            const end = nl < 0 ? chunk.length : nl;
            if (end > pos) {
              len += end - pos;
              lastCr = chunk[end - 1] === 13;
            }
            if (nl < 0) break;
            endLine();
            pos = nl + 1;
          }
        }
        endLine();
      } finally {
        stream.destroy();
      }
    }
  } finally {
    zip.close();
  }
  return { entries, records };
}

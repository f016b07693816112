/**
 * The batch file reader when the file is gone: a run whose other attempt finished deletes the
 * upload, and a late attempt that then opens it must get an error it can handle — not an
 * uncaught stream error that would take the whole worker process down.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readUnits } from '../../src/ingest/batch-file.reader.js';

async function drain(file: string): Promise<number> {
  let n = 0;
  for await (const batch of readUnits(file, 'ndjson')) n += batch.kind === 'json' ? batch.units.length : batch.rows.length;
  return n;
}

describe('readUnits', () => {
  it('reads plain and gzipped NDJSON the same', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reader-'));
    const text = Array.from({ length: 5 }, (_, i) => JSON.stringify({ event: 'e', properties: { i } })).join('\n');
    fs.writeFileSync(path.join(dir, 'a'), text);
    fs.writeFileSync(path.join(dir, 'b'), zlib.gzipSync(text));
    expect(await drain(path.join(dir, 'a'))).toBe(5);
    expect(await drain(path.join(dir, 'b'))).toBe(5);
    fs.rmSync(dir, { recursive: true });
  });

  it('a reader that stops early closes the file, gzipped or not', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reader-'));
    // Larger than one read (1 MB): the file is still open when the reader stops.
    const text = Array.from({ length: 60_000 }, (_, i) => JSON.stringify({ event: 'e', properties: { i, pad: 'x'.repeat(40) } })).join('\n');
    fs.writeFileSync(path.join(dir, 'plain'), text);
    fs.writeFileSync(path.join(dir, 'gz'), zlib.gzipSync(text, { level: 1 }));
    const target = (fd: string) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return ''; // closed meanwhile
      }
    };
    const openFiles = () => fs.readdirSync('/proc/self/fd').map(target).filter((f) => f.startsWith(dir));
    for (const name of ['plain', 'gz']) {
      for await (const batch of readUnits(path.join(dir, name), 'ndjson')) {
        expect(batch.kind).toBe('json');
        expect(openFiles()).toEqual([path.join(dir, name)]);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
      expect(openFiles()).toEqual([]);
    }
    fs.rmSync(dir, { recursive: true });
  });

  it('a missing file rejects the read, and no stream is left to fail on its own', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await expect(drain(path.join(os.tmpdir(), `gone-${process.pid}-${Date.now()}.upload`))).rejects.toMatchObject({ code: 'ENOENT' });
      // A leaked read stream reports its ENOENT on a later tick.
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
  });
});

/**
 * Streams a request body to a file, never holding more than a stream buffer in memory. The byte
 * limit is enforced as the bytes arrive (and up front from Content-Length): past it the partial
 * file is deleted, the rest of the body is drained (so the client can read the answer) and the
 * caller gets a 413.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { ValidationError } from '../lib/errors.js';

const tooLarge = () => new ValidationError(413, 'Request Entity Too Large');

export function streamToFile(req: IncomingMessage, file: string, maxBytes: number): Promise<number> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return new Promise<number>((resolve, reject) => {
    const out = fs.createWriteStream(file, { flags: 'wx' });
    let size = 0;
    let settled = false;
    const fail = (err: ValidationError) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.resume();
      out.destroy();
      fs.rm(file, { force: true }, () => reject(err));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(tooLarge());
      if (!out.write(chunk)) {
        req.pause();
        out.once('drain', () => req.resume());
      }
    };
    req.on('data', onData);
    req.on('aborted', () => fail(new ValidationError(400, 'the upload was interrupted')));
    req.on('error', () => fail(new ValidationError(400, 'the upload was interrupted')));
    out.on('error', () => fail(new ValidationError(500, 'could not store the upload')));
    req.on('end', () => {
      if (settled) return;
      out.end(() => {
        if (settled) return;
        settled = true;
        resolve(size);
      });
    });
  });
}

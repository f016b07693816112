/**
 * A `{"status":"ok","results":[…]}` answer written a page at a time, with back-pressure, so a
 * listing of any size holds one page in memory. The first page is read before anything is sent:
 * a failure there is an ordinary error answer. A failure after the first bytes cannot change the
 * status any more, so the connection is cut — the client sees a truncated body, never a
 * complete-looking partial list.
 */
import type { Response } from 'express';
import type { Logger } from '../lib/logger.js';
import { TextStreamWriter } from './text-stream.js';

export async function sendJsonPages(res: Response, pages: AsyncGenerator<readonly unknown[]>, log: Logger): Promise<void> {
  let page = await pages.next();
  res.status(200).type('application/json');
  const writer = new TextStreamWriter(res, { gzip: false, onError: (err) => log.warn({ err, reqId: res.locals.reqId }, 'listing stream ended early') });
  let chunk = '{"status":"ok","results":[';
  let first = true;
  try {
    while (!page.done) {
      for (const item of page.value) {
        chunk += first ? JSON.stringify(item) : `,${JSON.stringify(item)}`;
        first = false;
      }
      await writer.write(chunk);
      chunk = '';
      if (writer.gone) {
        await pages.return(undefined);
        return;
      }
      page = await pages.next();
    }
  } catch (err) {
    log.error({ err, reqId: res.locals.reqId }, 'listing failed after its first page; connection cut');
    res.destroy();
    return;
  }
  await writer.write(`${chunk}]}`);
  writer.end();
}

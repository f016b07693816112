/**
 * Amplitude Export API client: `GET {base}/api/2/export?start=YYYYMMDDTHH&end=YYYYMMDDTHH` with
 * Basic `apiKey:apiSecret`. The answer (a zip of gzipped NDJSON files) is streamed to a file, never
 * held in memory; it is written under a `.part` name and renamed when complete, so a file that
 * exists is a whole archive.
 *
 * Outcomes: 200 → archive on disk; 404 → no data in the window; 400 (the API's code for an
 * export over its size limit) → 'too-large' (the caller splits the window); 401/403 → AmplitudeCredentialsError
 * (permanent); 429, 5xx and network errors → retried with backoff, honouring Retry-After, then
 * a RetryableError. Everything stops promptly when the signal aborts.
 */
import { classifyCode, errorCode } from '../../src/lib/error-codes.js';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { PermanentError, RetryableError } from '../../src/lib/errors.js';
import { backoffMs, DEFAULT_RETRY, retryAfterMs, sleep, type RetryPolicy } from './retry.js';

export interface AmplitudeCredentials {
  apiKey: string;
  apiSecret: string;
}

/** One export request: the first and the last hour included, 'YYYYMMDDTHH' (UTC). */
export interface ExportWindow {
  start: string;
  end: string;
}

export type ExportOutcome = { kind: 'archive'; path: string; bytes: number } | { kind: 'no-data' } | { kind: 'too-large'; message: string };

export class AmplitudeCredentialsError extends PermanentError {
  constructor(status: number, detail: string) {
    super(`Amplitude rejected the API key and secret (HTTP ${status}${detail ? `: ${detail}` : ''}); check SOURCE_TOOL_API_KEY and SOURCE_TOOL_API_SECRET`);
    this.name = 'AmplitudeCredentialsError';
  }
}

export interface ExportClientOptions {
  /** https://amplitude.com or https://analytics.eu.amplitude.com (or a stand-in). */
  baseUrl: string;
  credentials: AmplitudeCredentials;
  retry?: RetryPolicy;
  /** No byte for this long → the request is abandoned and retried. */
  idleTimeoutMs?: number;
  log?: { warn: (obj: object, msg?: string) => void };
}

/** The whole UTC day 'YYYY-MM-DD', or one hour of it. */
export function windowOf(day: string, hour?: number): ExportWindow {
  const d = day.replaceAll('-', '');
  if (hour === undefined) return { start: `${d}T00`, end: `${d}T23` };
  const h = String(hour).padStart(2, '0');
  return { start: `${d}T${h}`, end: `${d}T${h}` };
}

export function exportUrl(baseUrl: string, w: ExportWindow): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/2/export?start=${w.start}&end=${w.end}`;
}

async function bodyText(res: Response): Promise<string> {
  try {
    return (await res.text()).trim().slice(0, 300);
  } catch {
    return '';
  }
}

export async function downloadExport(window: ExportWindow, dest: string, options: ExportClientOptions, signal: AbortSignal): Promise<ExportOutcome> {
  const policy = options.retry ?? DEFAULT_RETRY;
  const auth = `Basic ${Buffer.from(`${options.credentials.apiKey}:${options.credentials.apiSecret}`).toString('base64')}`;
  const url = exportUrl(options.baseUrl, window);
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  const part = `${dest}.part`;

  for (let attempt = 1; ; attempt++) {
    signal.throwIfAborted();
    let wait: number | undefined;
    let reason: string;
    const idle = new AbortController();
    const onAbort = () => idle.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let idleTimer: NodeJS.Timeout | undefined;
    const touch = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => idle.abort(new Error('no data received')), options.idleTimeoutMs ?? 120_000);
      idleTimer.unref();
    };
    try {
      touch();
      const res = await fetch(url, { headers: { authorization: auth, accept: 'application/zip' }, signal: idle.signal });
      if (res.status === 200 && res.body) {
        const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
        body.on('data', touch);
        await pipeline(body, fs.createWriteStream(part));
        const bytes = fs.statSync(part).size;
        fs.renameSync(part, dest);
        return { kind: 'archive', path: dest, bytes };
      }
      const text = await bodyText(res);
      if (res.status === 404) return { kind: 'no-data' };
      if (res.status === 401 || res.status === 403) throw new AmplitudeCredentialsError(res.status, text);
      // The Export API's documented code for a range over its size limit is 400 (its wording varies).
      if (res.status === 400) return { kind: 'too-large', message: text || 'the export is too large' };
      if (res.status === 429 || res.status >= 500) {
        wait = retryAfterMs(res.headers.get('retry-after'));
        reason = `HTTP ${res.status}${text ? `: ${text}` : ''}`;
      } else {
        throw new PermanentError(`Amplitude export answered HTTP ${res.status} for ${window.start}..${window.end}${text ? `: ${text}` : ''}`);
      }
    } catch (err) {
      if (err instanceof PermanentError) throw err;
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      // fetch wraps the socket's error: its code (not its text) says whether waiting can help.
      const code = errorCode(err);
      if (classifyCode(code) === 'permanent') throw new PermanentError(`Amplitude export ${window.start}..${window.end} cannot be reached (${code}): ${reason}`);
    } finally {
      clearTimeout(idleTimer);
      signal.removeEventListener('abort', onAbort);
      fs.rmSync(part, { force: true });
    }
    if (attempt > policy.retries) {
      throw new RetryableError(`Amplitude export ${window.start}..${window.end} still failing after ${attempt} attempts (${reason})`);
    }
    const delay = backoffMs(policy, attempt, wait);
    options.log?.warn({ window, attempt, delayMs: delay, reason }, 'amplitude export: retrying');
    await sleep(delay, signal);
  }
}

/**
 * A local stand-in for Amplitude's Export API (`GET /api/2/export?start=YYYYMMDDTHH&end=…`),
 * serving a seeded AmplitudeDataset in the real format: a zip (built with yazl) whose entries
 * are gzipped NDJSON files, several per hour, named `<project>/<project>_<day>_<H>#<n>.json.gz`
 * and stored uncompressed in the zip as Amplitude does.
 *
 * Behaviours: Basic auth (401 for other credentials), 404 for a window without data, 400 "too
 * large" for a window of more than one hour touching a configured day, a 429 (with Retry-After)
 * for the first N requests and a 503 for the next M, and a request log for assertions.
 * Built archives are cached on disk, so repeated requests (and benchmarks) cost a file read.
 *
 * Not covered: Amplitude's real bucketing by server_upload_time (this buckets by event_time),
 * its 2-hour export delay, and the 365-day request limit.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import yazl from 'yazl';
import type { AmplitudeDataset } from './dataset.js';

export interface StandinOptions {
  dataset: AmplitudeDataset;
  apiKey: string;
  apiSecret: string;
  /** Days whose whole-day export answers 400 "too large" (hour requests still work). */
  tooLargeDays?: string[];
  /** The first N requests answer 429 with Retry-After. */
  rateLimitFirst?: number;
  retryAfterSeconds?: number;
  /** After the 429s, the next M requests answer 503. */
  serverErrorsNext?: number;
  filesPerHour?: number;
  /** gzip level of the entries (1 is fast, for benchmarks). */
  gzipLevel?: number;
  cacheDir?: string;
}

export interface StandinRequest {
  start: string;
  end: string;
  status: number;
}

export interface AmplitudeStandin {
  url: string;
  requests: StandinRequest[];
  /** Builds the archives of these windows ahead of time (benchmarks time only the client). */
  prebuild: (windows: { start: string; end: string }[]) => Promise<void>;
  close: () => Promise<void>;
}

const HOUR_RE = /^(\d{4})(\d{2})(\d{2})T(\d{2})$/;

function parseHour(v: string | null): number | undefined {
  const m = v ? HOUR_RE.exec(v) : null;
  if (!m) return undefined;
  const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]));
  return Number.isFinite(t) && Number(m[4]) < 24 ? t : undefined;
}

const HOUR_MS = 3_600_000;

export async function startAmplitudeStandin(options: StandinOptions): Promise<AmplitudeStandin> {
  const ds = options.dataset;
  const tooLarge = new Set(options.tooLargeDays ?? []);
  const filesPerHour = options.filesPerHour ?? 3;
  const cacheDir = options.cacheDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'amplitude-standin-'));
  const ownCache = options.cacheDir === undefined;
  const expected = `Basic ${Buffer.from(`${options.apiKey}:${options.apiSecret}`).toString('base64')}`;
  const requests: StandinRequest[] = [];
  let served = 0;
  const building = new Map<string, Promise<string | null>>();
  // The last few days' records by hour, serialised: hour-by-hour requests of one day reuse them.
  const dayCache = new Map<string, Map<number, string[]>>();
  const linesByHour = (day: string): Map<number, string[]> => {
    let hours = dayCache.get(day);
    if (hours) return hours;
    hours = new Map();
    for (const e of ds.eventsForDay(day)) {
      const hourStart = Date.parse(`${(e.event_time as string).slice(0, 13)}:00:00Z`);
      let lines = hours.get(hourStart);
      if (!lines) hours.set(hourStart, (lines = []));
      lines.push(JSON.stringify(e));
    }
    dayCache.set(day, hours);
    if (dayCache.size > 3) dayCache.delete(dayCache.keys().next().value!);
    return hours;
  };

  /** Builds (once) the zip of hours [from, to]; null when the window holds no events. */
  function archiveFor(from: number, to: number): Promise<string | null> {
    const key = `${from}-${to}`;
    let p = building.get(key);
    if (!p) {
      p = buildArchive(from, to);
      building.set(key, p);
    }
    return p;
  }

  async function buildArchive(from: number, to: number): Promise<string | null> {
    const byHour = new Map<number, string[]>();
    for (let dayStart = from - (from % 86_400_000); dayStart <= to; dayStart += 86_400_000) {
      const day = new Date(dayStart).toISOString().slice(0, 10);
      for (const [hourStart, lines] of linesByHour(day)) {
        if (hourStart >= from && hourStart <= to) byHour.set(hourStart, lines);
      }
    }
    if (byHour.size === 0) return null;
    const zip = new yazl.ZipFile();
    const pid = ds.projectId;
    for (const [hourStart, lines] of [...byHour.entries()].sort((a, b) => a[0] - b[0])) {
      const day = new Date(hourStart).toISOString().slice(0, 10);
      const hour = new Date(hourStart).getUTCHours();
      const per = Math.ceil(lines.length / filesPerHour);
      for (let f = 0; f < filesPerHour; f++) {
        const part = lines.slice(f * per, (f + 1) * per);
        if (part.length === 0) continue;
        const gz = zlib.gzipSync(`${part.join('\n')}\n`, { level: options.gzipLevel ?? 6 });
        zip.addBuffer(gz, `${pid}/${pid}_${day}_${hour}#${f}.json.gz`, { compress: false, mtime: new Date(hourStart) });
      }
    }
    const file = path.join(cacheDir, `${crypto.randomBytes(6).toString('hex')}.zip`);
    zip.end();
    await new Promise<void>((resolve, reject) => {
      zip.outputStream.pipe(fs.createWriteStream(file)).on('finish', resolve).on('error', reject);
    });
    return file;
  }

  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://standin');
      const start = url.searchParams.get('start') ?? '';
      const end = url.searchParams.get('end') ?? '';
      const answer = (status: number, body: string, headers: Record<string, string> = {}) => {
        requests.push({ start, end, status });
        res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body);
      };
      if (url.pathname !== '/api/2/export' || req.method !== 'GET') return answer(404, 'Not found');
      if (req.headers.authorization !== expected) return answer(401, 'Invalid API key or secret key');
      served += 1;
      if (served <= (options.rateLimitFirst ?? 0)) {
        return answer(429, 'Too many requests', { 'retry-after': String(options.retryAfterSeconds ?? 1) });
      }
      if (served <= (options.rateLimitFirst ?? 0) + (options.serverErrorsNext ?? 0)) return answer(503, 'Service unavailable');
      const from = parseHour(start);
      const to = parseHour(end);
      if (from === undefined || to === undefined || to < from) return answer(400, "Invalid 'start' or 'end' parameter");
      if (to > from) {
        for (let t = from; t <= to; t += HOUR_MS) {
          if (tooLarge.has(new Date(t).toISOString().slice(0, 10))) {
            return answer(400, 'Raw data files were too large to export (over the 4GB limit). Please use a smaller time range.');
          }
        }
      }
      const file = await archiveFor(from, to);
      if (!file) return answer(404, 'No data for the requested time range');
      requests.push({ start, end, status: 200 });
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': String(fs.statSync(file).size) });
      fs.createReadStream(file).pipe(res);
    })().catch((err: unknown) => {
      res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    prebuild: async (windows) => {
      for (const w of windows) {
        const from = parseHour(w.start);
        const to = parseHour(w.end);
        if (from !== undefined && to !== undefined) await archiveFor(from, to);
      }
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownCache) fs.rmSync(cacheDir, { recursive: true, force: true });
    },
  };
}

/** HTTP helpers for the read-back tests: plain GETs with Basic auth, and NDJSON parsing. */
import http from 'node:http';
import { readbackEventsRead } from '../../src/readback/event-scan.js';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: () => any;
}

export async function get(url: string, auth?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, { headers: { ...(auth ? { authorization: auth } : {}), ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

export async function postForm(url: string, auth: string, form: Record<string, string>): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

export interface ExportLine {
  event: string;
  properties: Record<string, any>;
}

export function lines(text: string): ExportLine[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ExportLine);
}

/** `?a=b&…` with proper encoding. */
export function qs(params: Record<string, string | number | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.set(k, String(v));
  return `?${u.toString()}`;
}

/** Events read from the database by the read-back scans of this process so far. */
export async function eventsRead(purpose: 'export' | 'insights'): Promise<number> {
  const m = await readbackEventsRead.get();
  return m.values.find((v) => v.labels.purpose === purpose)?.value ?? 0;
}

/** A raw GET whose response the caller reads (and pauses) itself. */
export function rawGet(url: string, headers: Record<string, string>): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => resolve({ req, res }));
    req.once('error', reject);
  });
}

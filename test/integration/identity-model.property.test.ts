/**
 * Model-based property test of the simplified ID merge (docs/identity.md):
 * random interleavings of anonymous events, identified events that link devices, events of a
 * second user on an already linked device, out-of-order times, exact replays and several writers
 * (/track, /import, and the write path as syncs and migrations call it). After EVERY step the
 * service's answers must equal a small reference model written here:
 * - `GET /api/2.0/segmentation` per day, for type general, unique and average;
 * - the export's events with their (resolved) distinct ids;
 * - `GET …/identities` for every device and user seen.
 * Runs on every event store (storeKinds()); fast-check runs are kept modest for CI time.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestEvents } from '../../src/ingest/events.ingest.js';
import { seedProject, type SeededProject } from '../helpers/accounts.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { get, lines, qs } from '../helpers/read-back.js';
import { storeKinds, type TestStore } from '../helpers/store-kinds.js';

const DAY = 86_400_000;
const DAYS = 4;
const DEVICES = ['d0', 'd1', 'd2', 'd3'];
const USERS = ['u0', 'u1', 'u2'];
const NAMES = ['view', 'buy'];

type Writer = 'track' | 'import' | 'sync';

interface GenEvent {
  name: string;
  /** anon: $device_id only; prefixed: distinct_id `$device:<d>` only; user: $user_id only; both: $user_id + $device_id (links). */
  kind: 'anon' | 'prefixed' | 'user' | 'both';
  device: string;
  user: string;
  day: number;
  ms: number;
  /** Send an explicit $insert_id (else the service derives one from the content). */
  explicitId: boolean;
}

type Step = { kind: 'send'; writer: Writer; events: GenEvent[] } | { kind: 'replay'; writer: Writer; batch: number };

const genEvent: fc.Arbitrary<GenEvent> = fc.record({
  name: fc.constantFrom(...NAMES),
  kind: fc.constantFrom('anon', 'anon', 'prefixed', 'user', 'both', 'both'),
  device: fc.constantFrom(...DEVICES),
  user: fc.constantFrom(...USERS),
  day: fc.integer({ min: 0, max: DAYS - 1 }),
  ms: fc.integer({ min: 0, max: DAY - 1 }),
  explicitId: fc.boolean(),
});
const genWriter = fc.constantFrom<Writer>('track', 'import', 'sync');
const genStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('send' as const), writer: genWriter, events: fc.array(genEvent, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), writer: genWriter, batch: fc.nat() }) },
);

/** The reference model: stored events by dedupe key, and device → user links (first wins). */
class Model {
  readonly events = new Map<string, { name: string; distinctId: string; device?: string; time: number; insertId?: string }>();
  readonly links = new Map<string, string>();
  readonly seenUsers = new Set<string>();
  readonly seenDevices = new Set<string>();

  /** Applies one committed batch, in its order. */
  apply(records: { event: GenEvent; time: number; insertId?: string }[]): void {
    for (const { event: e, time, insertId } of records) {
      let distinctId: string;
      let device: string | undefined;
      if (e.kind === 'anon') [distinctId, device] = [`$device:${e.device}`, e.device];
      else if (e.kind === 'prefixed') [distinctId, device] = [`$device:${e.device}`, e.device];
      else distinctId = e.user;
      if (e.kind === 'both' && !this.links.has(e.device)) this.links.set(e.device, e.user);
      if (e.kind === 'user' || e.kind === 'both') this.seenUsers.add(e.user);
      if (e.kind !== 'user') this.seenDevices.add(e.device);
      // The dedupe key: an explicit id names the event; a derived one follows from the content.
      const key = `${e.name}|${distinctId}|${time}|${insertId ?? JSON.stringify(e)}`;
      if (!this.events.has(key)) this.events.set(key, { name: e.name, distinctId, device, time, insertId });
    }
  }

  resolved(e: { distinctId: string; device?: string }): string {
    return (e.device !== undefined && this.links.get(e.device)) || e.distinctId;
  }

  /** segmentation values for a type: event name → day label → number (names with events only). */
  report(type: 'general' | 'unique' | 'average', series: string[], dayOf: (t: number) => string): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    const cells = new Map<string, { n: number; users: Set<string> }>();
    for (const e of this.events.values()) {
      const k = `${e.name}\u0000${dayOf(e.time)}`;
      const c = cells.get(k) ?? { n: 0, users: new Set<string>() };
      c.n += 1;
      c.users.add(this.resolved(e));
      cells.set(k, c);
      out[e.name] ??= Object.fromEntries(series.map((s) => [s, 0]));
    }
    for (const [k, c] of cells) {
      const [name, day] = k.split('\u0000') as [string, string];
      out[name]![day] = type === 'general' ? c.n : type === 'unique' ? c.users.size : c.n / c.users.size;
    }
    return out;
  }

  identity(distinctId: string): { user_id: string | null; device_ids: string[] } {
    const device = distinctId.startsWith('$device:') ? distinctId.slice(8) : undefined;
    const user = device !== undefined ? (this.links.get(device) ?? null) : distinctId;
    if (user === null) return { user_id: null, device_ids: [device!] };
    const devices = [...this.links].filter(([, u]) => u === user).map(([d]) => d);
    return { user_id: user, device_ids: devices.sort() };
  }
}

describe.each(storeKinds())('simplified ID merge against a reference model on $name', (kind) => {
  let t: TestStore;
  let app: TestApp;
  const base = Math.floor(Date.now() / DAY) * DAY - DAYS * DAY;
  const dayLabel = (ms: number) => new Date(Math.floor(ms / DAY) * DAY).toISOString().slice(0, 10);
  const series = Array.from({ length: DAYS }, (_, i) => dayLabel(base + i * DAY));

  beforeAll(async () => {
    t = await kind.open();
    app = await startTestApp(t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.destroy();
  });

  function record(p: SeededProject, e: GenEvent, time: number, insertId: string | undefined, writer: Writer) {
    const props: Record<string, unknown> = { time, seq: JSON.stringify(e) };
    if (e.kind === 'anon') props.$device_id = e.device;
    if (e.kind === 'prefixed') props.distinct_id = `$device:${e.device}`;
    if (e.kind === 'user') props.$user_id = e.user;
    if (e.kind === 'both') Object.assign(props, { $user_id: e.user, $device_id: e.device });
    if (insertId) props.$insert_id = insertId;
    if (writer === 'track') props.token = p.token;
    return { event: e.name, properties: props };
  }

  async function send(p: SeededProject, writer: Writer, records: unknown[]): Promise<void> {
    if (writer === 'sync') {
      const r = await ingestEvents(t.store, p.id, 'warehouse-import', records, { strict: true });
      expect(r.rejected).toEqual([]);
      return;
    }
    const url = writer === 'track' ? `${app.url}/track?verbose=1` : `${app.url}/import?project_id=${p.id}&strict=1`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(writer === 'import' ? { authorization: p.basic } : {}) },
      body: JSON.stringify(records),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  async function check(p: SeededProject, model: Model): Promise<void> {
    const range = { project_id: p.id, from_date: series[0], to_date: series[DAYS - 1], unit: 'day' };
    for (const type of ['general', 'unique', 'average'] as const) {
      const res = await get(`${app.url}/api/2.0/segmentation${qs({ ...range, type })}`, p.basic);
      expect(res.status, res.text).toBe(200);
      const body = res.json();
      expect(body.data.series).toEqual(series);
      const expected = model.report(type, series, dayLabel);
      expect(Object.keys(body.data.values).sort(), type).toEqual(Object.keys(expected).sort());
      for (const [name, row] of Object.entries(expected)) {
        for (const [day, v] of Object.entries(row)) expect(body.data.values[name][day], `${type} ${name} ${day}`).toBeCloseTo(v, 9);
      }
    }
    const exp = await get(`${app.url}/api/2.0/export${qs({ project_id: p.id, from_date: series[0], to_date: series[DAYS - 1] })}`, p.basic);
    expect(exp.status).toBe(200);
    const got = lines(exp.text)
      .map((l) => `${l.event}|${l.properties.time * 1000}|${l.properties.distinct_id}`)
      .sort();
    const want = [...model.events.values()].map((e) => `${e.name}|${e.time}|${model.resolved(e)}`).sort();
    expect(got).toEqual(want);
    const ids = [...[...model.seenDevices].map((d) => `$device:${d}`), ...model.seenUsers];
    for (const id of ids) {
      const res = await get(`${app.url}/api/app/projects/${p.id}/identities${qs({ distinct_id: id })}`, p.basic);
      expect(res.status, res.text).toBe(200);
      expect(res.json(), id).toEqual({ status: 'ok', results: model.identity(id) });
    }
  }

  it('segmentation, export and identities equal the model after every step', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(genStep, { minLength: 1, maxLength: 8 }), async (steps) => {
        run += 1;
        const p = await seedProject(t.db, { name: `model ${run}` });
        const model = new Model();
        const batches: { event: GenEvent; time: number; insertId?: string }[][] = [];
        let n = 0;
        for (const step of steps) {
          let batch: { event: GenEvent; time: number; insertId?: string }[];
          if (step.kind === 'send') {
            batch = step.events.map((e) => ({ event: e, time: base + e.day * DAY + e.ms, insertId: e.explicitId ? `id-${run}-${n++}` : undefined }));
            batches.push(batch);
          } else {
            if (batches.length === 0) continue;
            batch = batches[step.batch % batches.length]!;
          }
          await send(p, step.writer, batch.map((r) => record(p, r.event, r.time, r.insertId, step.writer)));
          model.apply(batch);
          await check(p, model);
        }
      }),
      { numRuns: 8 },
    );
  });
});

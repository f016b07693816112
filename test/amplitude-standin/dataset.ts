/**
 * A seeded fake Amplitude project: records in the Export API's shape (event_time as
 * "YYYY-MM-DD HH:MM:SS.ffffff" UTC, user_properties snapshots on every event, Amplitude's
 * context fields). Any day's events are regenerated on demand from (seed, day), so a dataset of
 * millions of events never sits in memory.
 *
 * Properties the tests rely on: event times are unique within a day, so every record has a
 * distinct dedupe key (N generated → N stored); insert ids are a mix of valid source ids,
 * missing ones and invalid ones (both replaced by the hashed id); about 10% of events are
 * device-only (no user_id); identified users' user_properties change over time, so only the
 * latest event's snapshot is right for the profile.
 */
import crypto from 'node:crypto';

export interface DatasetOptions {
  seed: number;
  /** First day, YYYY-MM-DD. */
  startDay: string;
  days: number;
  totalEvents: number;
  users: number;
  /** Days with no events at all (the export answers 404). */
  emptyDays?: string[];
  /** Amplitude project id used in entry names. */
  projectId?: number;
}

export type AmplitudeRecord = Record<string, unknown>;

const DAY_MS = 86_400_000;
const EVENTS = ['Page Viewed', 'Button Clicked', 'Signed Up', 'Purchase', 'Search', 'Video Played', 'Logout'];
const PLANS = ['free', 'pro', 'enterprise'];
const CITIES = [
  ['Berlin', 'Berlin', 'Germany'],
  ['Paris', 'Ile-de-France', 'France'],
  ['Austin', 'Texas', 'United States'],
  ['Osaka', 'Osaka', 'Japan'],
] as const;

/** mulberry32: small, fast, good enough for test data. */
function rngFrom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seedOf(...parts: (string | number)[]): number {
  return crypto.createHash('sha256').update(parts.join('|')).digest().readUInt32LE(0);
}

function pad(n: number, w: number): string {
  return String(n).padStart(w, '0');
}

/** Amplitude's export time format, with microseconds. */
export function amplitudeTime(ms: number, micros = 0): string {
  const iso = new Date(ms).toISOString(); // 2024-01-02T03:04:05.678Z
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}${pad(micros, 3)}`;
}

export class AmplitudeDataset {
  readonly projectId: number;
  private readonly dayList: string[];
  private readonly empty: Set<string>;

  constructor(readonly options: DatasetOptions) {
    this.projectId = options.projectId ?? 187520;
    const start = Date.parse(`${options.startDay}T00:00:00Z`);
    this.dayList = Array.from({ length: options.days }, (_, i) => new Date(start + i * DAY_MS).toISOString().slice(0, 10));
    this.empty = new Set(options.emptyDays ?? []);
  }

  days(): string[] {
    return [...this.dayList];
  }

  /** Events on each non-empty day: the total spread evenly, the remainder on the first days. */
  countForDay(day: string): number {
    if (this.empty.has(day) || !this.dayList.includes(day)) return 0;
    const full = this.dayList.filter((d) => !this.empty.has(d));
    const base = Math.floor(this.options.totalEvents / full.length);
    const extra = this.options.totalEvents % full.length;
    return base + (full.indexOf(day) < extra ? 1 : 0);
  }

  /** The user properties a user has at time `t` (changes weekly, so the latest one matters). */
  userProperties(u: number, t: number): Record<string, unknown> {
    const week = Math.floor(t / (7 * DAY_MS));
    const props: Record<string, unknown> = {
      plan: PLANS[(u + week) % PLANS.length],
      cohort: `c${u % 7}`,
      score: (u * 31 + Math.floor(t / DAY_MS)) % 1000,
      'Initial Referrer': u % 2 === 0 ? 'google' : 'direct',
    };
    if (u % 5 === 0) props.vip = true;
    if (u % 3 === 0) props.tags = ['beta', `t${u % 4}`];
    return props;
  }

  eventsForDay(day: string): AmplitudeRecord[] {
    const n = this.countForDay(day);
    const out: AmplitudeRecord[] = [];
    const rng = rngFrom(seedOf(this.options.seed, day));
    const dayStart = Date.parse(`${day}T00:00:00Z`);
    const step = DAY_MS / Math.max(n, 1);
    for (let i = 0; i < n; i++) {
      // Strictly increasing, so times are unique within the day.
      const t = dayStart + Math.floor((i + rng() * 0.9) * step);
      out.push(this.record(rng, t, i, day));
    }
    return out;
  }

  private record(rng: () => number, t: number, i: number, day: string): AmplitudeRecord {
    const anonymous = rng() < 0.1;
    const u = Math.floor(rng() * this.options.users);
    const k = Math.floor(rng() * this.options.users * 2);
    const userId = anonymous ? null : `user-${u}`;
    const deviceId = anonymous ? `anon-device-${k}` : `device-${u}-${Math.floor(rng() * 2)}`;
    const amplitudeId = anonymous ? 9_000_000 + k : 1_000_000 + u;
    const city = CITIES[u % CITIES.length]!;
    const idKind = rng();
    const insertId =
      idKind < 0.8
        ? crypto.createHash('md5').update(`${this.options.seed}|${day}|${i}`).digest('hex')
        : idKind < 0.9
          ? undefined
          : `amp_${day}_${i}_${'x'.repeat(30)}`; // invalid: underscores, over 36 characters
    const micros = Math.floor(rng() * 1000);
    const hasGroup = u % 4 === 0 && !anonymous;
    const record: AmplitudeRecord = {
      $insert_id: insertId,
      $schema: 12,
      adid: null,
      amplitude_attribution_ids: null,
      amplitude_event_type: null,
      amplitude_id: amplitudeId,
      app: this.projectId,
      city: city[0],
      client_event_time: amplitudeTime(t - 150, micros),
      client_upload_time: amplitudeTime(t + 2000, micros),
      country: city[2],
      data: { path: '/2/httpapi', group_first_event: {}, group_ids: {} },
      device_brand: null,
      device_carrier: i % 3 === 0 ? 'Vodafone' : null,
      device_family: 'Mac',
      device_id: deviceId,
      device_manufacturer: null,
      device_model: 'Mac OS',
      device_type: 'Mac',
      dma: null,
      event_id: i,
      event_properties: {
        path: `/page/${Math.floor(rng() * 50)}`,
        value: Math.round(rng() * 10000) / 100,
        ...(i % 7 === 0 ? { items: [{ sku: `sku-${i % 13}`, qty: 1 + (i % 3) }] } : {}),
      },
      event_time: amplitudeTime(t, micros),
      event_type: EVENTS[Math.floor(rng() * EVENTS.length)],
      global_user_properties: {},
      group_properties: hasGroup ? { 'company plan': PLANS[u % 3] } : {},
      groups: hasGroup ? { company: `company-${u % 50}` } : {},
      idfa: null,
      ip_address: '192.0.2.1',
      is_attribution_event: false,
      language: 'English',
      library: 'amplitude-ts/2.4.0',
      location_lat: null,
      location_lng: null,
      os_name: 'Chrome',
      os_version: '124',
      partner_id: null,
      paying: null,
      plan: {},
      platform: 'Web',
      processed_time: amplitudeTime(t + 60_000),
      region: city[1],
      sample_rate: null,
      server_received_time: amplitudeTime(t + 2100),
      server_upload_time: amplitudeTime(t + 2200),
      session_id: t - (t % 1_800_000),
      start_version: null,
      user_creation_time: amplitudeTime(Date.parse(this.options.startDay) + (u % 1000) * 1000),
      user_id: userId,
      user_properties: anonymous ? { 'Initial Referrer': 'direct' } : this.userProperties(u, t),
      uuid: crypto.createHash('md5').update(`uuid|${this.options.seed}|${day}|${i}`).digest('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5'),
      version_name: '3.1.0',
    };
    if (insertId === undefined) delete record.$insert_id;
    return record;
  }

  /**
   * What the profiles must hold after a migration of days [from, to]: per identified user, the
   * user_properties of their latest event in that range.
   */
  expectedProfiles(from = this.dayList[0]!, to = this.dayList[this.dayList.length - 1]!): Map<string, { time: number; properties: Record<string, unknown> }> {
    const out = new Map<string, { time: number; properties: Record<string, unknown> }>();
    for (const day of this.dayList) {
      if (day < from || day > to) continue;
      for (const e of this.eventsForDay(day)) {
        const userId = e.user_id as string | null;
        if (!userId) continue;
        const t = Date.parse(`${(e.event_time as string).slice(0, 10)}T${(e.event_time as string).slice(11, 23)}Z`);
        const prev = out.get(userId);
        if (!prev || t > prev.time) out.set(userId, { time: t, properties: e.user_properties as Record<string, unknown> });
      }
    }
    return out;
  }

  totalEvents(from = this.dayList[0]!, to = this.dayList[this.dayList.length - 1]!): number {
    return this.dayList.filter((d) => d >= from && d <= to).reduce((s, d) => s + this.countForDay(d), 0);
  }
}

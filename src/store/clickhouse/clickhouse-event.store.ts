/**
 * The event store on ClickHouse (one server, or a cluster through Distributed tables). How it
 * keeps the EventStore promises without transactions (docs/scaling.md has the long form):
 *
 * - Exactly once: every read collapses versions (FINAL / argMax), so duplicates on disk never
 *   show. A write looks up which keys of the batch are already live and inserts only the others,
 *   under a per-project lock so that concurrent writers in this process cannot both count a key
 *   as new. The count of new events is therefore exact within a process; across web processes
 *   two simultaneous writers of the same key may both count it (stored data stays exact).
 * - Durable on 200: one synchronous INSERT per batch (no async inserts; on a cluster
 *   insert_distributed_sync waits for every shard). Usage is counted by that same INSERT (a
 *   materialized view over rows flagged is_new).
 * - Update and delete by key write newer versions (a replacement row, or a delete marker) in one
 *   INSERT; nothing is mutated in place.
 */
import type {
  EventBatch,
  EventFilter,
  EventNameCount,
  EventStore,
  Identity,
  IdentityLink,
  MirrorResult,
  MirrorScope,
  ReportCell,
  ReportQuery,
  ScanQuery,
  StoredEvent,
} from '../event-store.js';
import { WAREHOUSE_IMPORT_STAMP } from '../event-store.js';
import { deviceOfDistinctId } from '../../domain/identity.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { KeyedMutex } from '../../lib/keyed-mutex.js';
import { KnownLinks } from '../known-links.js';
import { ClickHouseConnection } from './clickhouse-connection.js';
import { migrateEventStore, type EventStoreSchemaConfig } from './clickhouse-migrate.js';
import { HOT_COLUMN_PREFIX } from './clickhouse-hot-properties.js';
import {
  eventNamesSql,
  linksSql,
  pageBoundSql,
  reportSql,
  scanPageSql,
  sliceBounds,
  sliceProbeSql,
  timeSpanSql,
  type ReportPlan,
  type ScanCursor,
} from './clickhouse-reads.js';
import { EventsBody, INSERT_COLUMNS, keyOfRow, rowHead, keyString, VersionClock, type EventKey } from './clickhouse-rows.js';
import { int, list, str } from './clickhouse-sql.js';
import { parseClickHouseUrl } from './clickhouse-url.js';

export type ClickHouseStoreConfig = EventStoreSchemaConfig;

export interface ClickHouseReadOptions {
  /**
   * Reports over fewer rows than this run one FINAL; larger ones are cut into time slices, one
   * per server thread (the probe that finds the cuts costs a round trip). Tests set 0.
   */
  sliceMinRows?: number;
}

/** What reads adapt to, asked of the server once: its hot-property columns and its threads. */
interface ServerReadInfo {
  /** Property name → its segment column (clickhouse-hot-properties.ts). */
  hotColumns: ReadonlyMap<string, string>;
  threads: number;
}

interface KeyRow {
  event: string;
  distinct_id: string;
  time: number;
  insert_id: string;
}

/** Most events one grouped INSERT carries (a single larger batch still goes alone). */
const GROUP_MAX_EVENTS = 20_000;

/** A scan's first window; then about twice the span the last page needed. */
const INITIAL_SCAN_SPAN_MS = 3_600_000;

/** Insert ids per lookup query (a whole group's); the connection raises max_query_size to fit. */
const LOOKUP_CHUNK = 20_000;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The import's stamp among the typed top-level properties ('' when absent: index 0 is the default). */
const STAMP_VALUE = `prop_strs[indexOf(prop_keys, ${str(WAREHOUSE_IMPORT_STAMP)})]`;
/** Insert ids per delete of an import's events: one key lookup and one INSERT of markers each. */
const DELETE_CHUNK = 10_000;

export class ClickHouseEventStore implements EventStore {
  readonly kind = 'clickhouse';
  readonly joinsTransactions = false;
  readonly rowEncoding = 'clickhouse' as const;
  private readonly conn: ClickHouseConnection;
  private readonly locks = new KeyedMutex();
  private readonly clock = new VersionClock();
  private readonly knownLinks = new KnownLinks();
  private readonly writes = new GroupCommit<EventBatch, number>(
    (_project, batches) => this.commitGroup(batches),
    (b) => Math.max(1, b.rows.event.length),
    GROUP_MAX_EVENTS,
  );

  private readInfo?: Promise<ServerReadInfo>;
  private readonly sliceMinRows: number;

  constructor(
    private readonly config: ClickHouseStoreConfig,
    options: ClickHouseReadOptions = {},
  ) {
    this.conn = new ClickHouseConnection(parseClickHouseUrl(config.EVENT_STORE_URL), { distributedSync: Boolean(config.EVENT_STORE_CLUSTER) });
    this.sliceMinRows = options.sliceMinRows ?? 100_000;
  }

  async migrate(): Promise<void> {
    await migrateEventStore(this.config);
    this.readInfo = undefined;
  }

  /** Cached for the process (a release adding hot columns is followed by a restart); a failed ask is asked again. */
  private serverReadInfo(): Promise<ServerReadInfo> {
    this.readInfo ??= this.askServerReadInfo().catch((err: unknown) => {
      this.readInfo = undefined;
      throw err;
    });
    return this.readInfo;
  }

  private async askServerReadInfo(): Promise<ServerReadInfo> {
    const [columns, [threads]] = await Promise.all([
      this.conn.rows<{ name: string; comment: string }>(
        `SELECT name, comment FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND substring(name, 1, ${HOT_COLUMN_PREFIX.length}) = ${str(HOT_COLUMN_PREFIX)}`,
      ),
      this.conn.rows<{ value: string }>(`SELECT value FROM system.settings WHERE name = 'max_threads'`),
    ]);
    return {
      hotColumns: new Map(columns.filter((c) => c.comment !== '').map((c) => [c.comment, c.name])),
      threads: Number(/\d+/.exec(threads?.value ?? '')?.[0] ?? 1),
    };
  }

  /** Where to cut a large range into one slice per server thread; none for a small one. */
  private async sliceBoundsOf(f: EventFilter): Promise<number[] | undefined> {
    const { threads } = await this.serverReadInfo();
    if (threads < 2) return undefined;
    const [probe] = await this.conn.rows<{ n: number; q: number[] }>(sliceProbeSql(f, threads));
    if (!probe || Number(probe.n) < this.sliceMinRows) return undefined;
    return sliceBounds(f, probe.q.map(Number));
  }

  /** The hot column standing in for a segmentation's property, and the time slices of a large range. */
  private async reportPlan(query: ReportQuery): Promise<ReportPlan> {
    const { hotColumns } = await this.serverReadInfo();
    const segmentColumn = query.on?.kind === 'property' ? hotColumns.get(query.on.name) : undefined;
    return { segmentColumn, sliceBounds: await this.sliceBoundsOf(query) };
  }

  /**
   * The live keys of the project among those with these insert ids: the latest version of each
   * key, unless that version is a delete marker. Not `FINAL`: it merges every part on the sort
   * key and defeats PREWHERE, so each lookup read the whole table; `PREWHERE insert_id IN`
   * reads just that column and then only the matching rows, and `GROUP BY key HAVING
   * argMax(is_deleted, ver) = 0` keeps exactly what FINAL would (6× faster at 200k events).
   */
  /** `scope`: only the events whose live version carries the import's stamp (a mirror's own). */
  private async liveKeys(projectId: number, insertIds: readonly string[], times?: readonly number[], scope?: MirrorScope): Promise<KeyRow[]> {
    const where = [`project_id = ${int(projectId)}`];
    // A duplicate has the very same time (it is part of the key), so a write's lookup reads only
    // the batch's time span: the sort key starts (project_id, time), so the index skips the rest
    // of the table — a batch of today's events does not read years of insert ids.
    if (times && times.length > 0) {
      let lo = Infinity;
      let hi = -Infinity;
      for (const t of times) {
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      where.push(`time >= ${int(lo)}`, `time <= ${int(hi)}`);
    }
    const out: KeyRow[] = [];
    for (const part of chunks([...new Set(insertIds)], LOOKUP_CHUNK)) {
      out.push(
        ...(await this.conn.rows<KeyRow>(
          `SELECT event, distinct_id, time, insert_id FROM events PREWHERE insert_id IN ${list(part.map(str))} ` +
            `WHERE ${where.join(' AND ')} GROUP BY event, distinct_id, time, insert_id HAVING argMax(is_deleted, ver) = 0${scope ? ` AND argMax(${STAMP_VALUE}, ver) = ${str(scope.importId)}` : ''}`,
        )),
      );
    }
    return out;
  }

  /** Links of devices that have none yet (first link wins; within the batch, array order). */
  private async newLinks(projectId: number, links: readonly IdentityLink[]): Promise<IdentityLink[]> {
    const wanted = links.filter((l) => l.deviceId !== '' && l.userId !== '');
    if (wanted.length === 0) return [];
    const linked = new Set<string>();
    for (const part of chunks([...new Set(wanted.map((l) => l.deviceId))], LOOKUP_CHUNK)) {
      const rows = await this.conn.rows<{ device_id: string }>(
        `SELECT DISTINCT device_id FROM identity_links WHERE project_id = ${int(projectId)} AND device_id IN ${list(part.map(str))}`,
      );
      for (const r of rows) linked.add(r.device_id);
    }
    const out: IdentityLink[] = [];
    for (const l of wanted) {
      if (linked.has(l.deviceId)) continue;
      linked.add(l.deviceId);
      out.push(l);
    }
    return out;
  }

  private async insertLinks(projectId: number, links: readonly IdentityLink[]): Promise<void> {
    if (links.length === 0) return;
    const ver = this.clock.take(links.length);
    await this.conn.insert(
      'identity_links',
      links.map((l, i) => ({ project_id: projectId, device_id: l.deviceId, user_id: l.userId, ver: ver + i })),
    );
  }

  private insertEvents(body: EventsBody): Promise<void> {
    return this.conn.insertRowBinary('events', INSERT_COLUMNS, body.chunks);
  }

  /**
   * Batches that arrive while another write of the project runs are committed together with one
   * lookup and one INSERT (group commit): many small /track calls become one insert, and each
   * call still resolves only once the insert carrying it is acknowledged.
   */
  writeBatch(batch: EventBatch): Promise<number> {
    return this.writes.submit(String(batch.projectId), batch);
  }

  /**
   * One write of events that carry links: the key lookup and the link lookup go out together,
   * then the events insert and the links insert. Identity's cost on this store was those two
   * extra round trips taken one after the other with the project's lock held, not CPU
   * (docs/identity.md). Either insert failing answers 503; the retry finds what did land (events
   * as duplicates, devices as linked) and writes the rest. `build` turns what the lookup found
   * into the body to insert and the write's answer.
   */
  private async writeWithLinks<T, R>(
    projectId: number,
    links: readonly IdentityLink[],
    lookup: () => Promise<T>,
    build: (found: T) => { body: EventsBody; result: R },
  ): Promise<R> {
    const unknown = this.knownLinks.unknown(projectId, links);
    const [found, fresh] = await Promise.all([lookup(), this.newLinks(projectId, unknown)]);
    const { body, result } = build(found);
    await Promise.all([this.insertEvents(body), this.insertLinks(projectId, fresh)]);
    this.knownLinks.committed(projectId, unknown);
    return result;
  }

  /** One group of batches of one project: returns each batch's count of new events. */
  private async commitGroup(batches: EventBatch[]): Promise<number[]> {
    const projectId = batches[0]!.projectId;
    const ids = batches.flatMap((b) => b.rows.insertId);
    const times = batches.flatMap((b) => b.rows.time);
    const links = batches.flatMap((b) => b.rows.links);
    return this.locks.run(String(projectId), () =>
      this.writeWithLinks(
        projectId,
        links,
        () => this.liveKeys(projectId, ids, times),
        (liveRows) => {
          const live = new Set<string>();
          for (const r of liveRows) live.add(keyString(rowKey(r)));
          const ver = this.clock.take();
          const body = new EventsBody();
          // Earlier batches first: a key repeated later (in the same or a later batch) is a duplicate.
          const counts = batches.map(({ rows, source, now }) => {
            const head = rowHead({ projectId, source, now, ver, isNew: true });
            let fresh = 0;
            for (let i = 0; i < rows.event.length; i++) {
              const k = keyString(keyOfRow(rows, i));
              if (live.has(k)) continue;
              live.add(k);
              body.event(head, rows, i);
              fresh++;
            }
            return fresh;
          });
          return { body, result: counts };
        },
      ),
    );
  }

  async updateByKey(batch: EventBatch, scope: MirrorScope): Promise<MirrorResult> {
    const { rows, projectId } = batch;
    return this.locks.run(String(projectId), () =>
      this.writeWithLinks(
        projectId,
        rows.links,
        () => Promise.all([this.liveKeys(projectId, rows.insertId, undefined, scope), this.liveKeys(projectId, rows.insertId)]),
        ([own, all]) => {
          const byInsertId = new Map<string, EventKey[]>();
          for (const r of own) {
            const list = byInsertId.get(r.insert_id) ?? [];
            list.push(rowKey(r));
            byInsertId.set(r.insert_id, list);
          }
          // Keys other sources' events hold: a newer version would replace their event, so the row is skipped.
          const ownKeys = new Set(own.map((r) => keyString(rowKey(r))));
          const taken = new Set(all.map((r) => keyString(rowKey(r))).filter((k) => !ownKeys.has(k)));
          // The last row of an insert id in the batch is the one that stays.
          const last = new Map<string, number>();
          for (let i = 0; i < rows.insertId.length; i++) last.set(rows.insertId[i]!, i);
          const ver = this.clock.take();
          // One INSERT: the replacements and the markers of the keys they replace land together.
          const body = new EventsBody();
          const result: MirrorResult = { updated: 0, inserted: 0, skipped: [] };
          // Every row of the write carries one of two heads: a new key, or a replacement.
          const heads = [false, true].map((isNew) => rowHead({ projectId, source: batch.source, now: batch.now, ver, isNew }));
          for (const [insertId, i] of last) {
            const old = byInsertId.get(insertId) ?? [];
            const key = keyString(keyOfRow(rows, i));
            for (const k of old) if (keyString(k) !== key) body.deleteMarker(projectId, k, ver, batch.now);
            if (taken.has(key)) {
              result.skipped.push(insertId);
              continue;
            }
            body.event(heads[old.length === 0 ? 1 : 0]!, rows, i);
            if (old.length === 0) result.inserted++;
            else result.updated++;
          }
          return { body, result };
        },
      ),
    );
  }

  async deleteByKey(projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<number> {
    if (insertIds.length === 0) return 0;
    const stored = await this.deleteLive(projectId, scope, insertIds);
    return new Set(stored.map((r) => r.insert_id)).size;
  }

  async deleteImportEvents(projectId: number, scope: MirrorScope): Promise<number> {
    // Any version that carried the stamp names a candidate; deleteLive keeps the live ones whose latest version still does.
    const ids = await this.conn.rows<{ insert_id: string }>(
      `SELECT DISTINCT insert_id FROM events WHERE project_id = ${int(projectId)} AND ${STAMP_VALUE} = ${str(scope.importId)}`,
    );
    let deleted = 0;
    for (const part of chunks(ids.map((r) => r.insert_id), DELETE_CHUNK)) deleted += (await this.deleteLive(projectId, scope, part)).length;
    return deleted;
  }

  /** Writes delete markers over the scope's live events with these insert ids; returns them. */
  private deleteLive(projectId: number, scope: MirrorScope, insertIds: readonly string[]): Promise<KeyRow[]> {
    return this.locks.run(String(projectId), async () => {
      const stored = await this.liveKeys(projectId, insertIds, undefined, scope);
      const ver = this.clock.take();
      const now = Date.now();
      const body = new EventsBody();
      for (const r of stored) body.deleteMarker(projectId, rowKey(r), ver, now);
      await this.insertEvents(body);
      return stored;
    });
  }

  /**
   * Keyset pages. Each page is first bounded in time (pageBoundSql over a window that grows until
   * it holds a page), so reading a page costs about a page — not the rest of the range, which a
   * FINAL read with LIMIT would scan on 18.16.
   */
  async *scan(query: ScanQuery): AsyncGenerator<StoredEvent[]> {
    const [span0] = await this.conn.rows<{ first: number; last: number; n: number }>(timeSpanSql(query));
    if (!span0 || Number(span0.n) === 0) return;
    // Windows never reach past the last stored time: the growth below ends there.
    const end = Math.min(query.toMs, Number(span0.last) + 1);
    let after: ScanCursor | undefined;
    let span = INITIAL_SCAN_SPAN_MS;
    let lo = Math.max(query.fromMs, Number(span0.first));
    for (;;) {
      let toMs = end;
      for (;;) {
        const hi = span >= end - lo ? end : lo + span;
        const [bound] = await this.conn.rows<{ time: number }>(pageBoundSql({ ...query, toMs: hi }, query.pageSize, after));
        if (bound) {
          toMs = Number(bound.time) + 1;
          span = Math.max(2 * (toMs - lo), 1000);
          break;
        }
        if (hi === end) break;
        span *= 4;
      }
      const rows = await this.conn.rows<KeyRow & { properties: string; resolved_id: string }>(scanPageSql({ ...query, toMs }, query.pageSize, after));
      if (rows.length === 0) return;
      yield rows.map((r) => ({
        event: r.event,
        distinctId: r.distinct_id,
        time: Number(r.time),
        insertId: r.insert_id,
        properties: JSON.parse(r.properties) as Record<string, unknown>,
        resolvedId: r.resolved_id,
      }));
      if (rows.length < query.pageSize) return;
      const l = rows[rows.length - 1]!;
      after = { time: Number(l.time), event: l.event, distinctId: l.distinct_id, insertId: l.insert_id };
      lo = after.time;
    }
  }

  async report(query: ReportQuery): Promise<ReportCell[]> {
    const rows = await this.conn.rows<{ segment: string; bucket: number; value: number }>(reportSql(query, await this.reportPlan(query)));
    return rows.map((r) => ({ segment: r.segment, bucket: Number(r.bucket), value: Number(r.value) }));
  }

  async eventNames(projectId: number, sinceMs: number, limit: number): Promise<EventNameCount[]> {
    const f = { projectId, fromMs: sinceMs, toMs: Number.MAX_SAFE_INTEGER };
    const rows = await this.conn.rows<{ event: string; n: number }>(eventNamesSql(f, limit, await this.sliceBoundsOf(f)));
    return rows.map((r) => ({ event: r.event, count: Number(r.n) }));
  }

  async usageForMonth(projectId: number, month: string): Promise<Record<string, number>> {
    const m = /^(\d{4})-(\d{2})$/.exec(month);
    if (!m) return {};
    const rows = await this.conn.rows<{ source: string; n: number }>(
      `SELECT source, sum(events) AS n FROM usage WHERE project_id = ${int(projectId)} AND month = ${int(Number(m[1]) * 100 + Number(m[2]))} GROUP BY source`,
    );
    return Object.fromEntries(rows.filter((r) => Number(r.n) > 0).map((r) => [r.source, Number(r.n)]));
  }

  async count(projectId: number): Promise<number> {
    const [row] = await this.conn.rows<{ n: number }>(`SELECT count() AS n FROM events FINAL WHERE project_id = ${int(projectId)} AND is_deleted = 0`);
    return Number(row?.n ?? 0);
  }

  async identityOf(projectId: number, distinctId: string): Promise<Identity> {
    const links = linksSql(projectId);
    const deviceOf = async (deviceId: string) => (await this.usersOfDevices(projectId, [deviceId])).get(deviceId);
    const devicesOf = async (userId: string) =>
      (await this.conn.rows<{ device_id: string }>(`SELECT device_id FROM (${links}) WHERE link_user_id = ${str(userId)} ORDER BY device_id`)).map((r) => r.device_id);
    const device = deviceOfDistinctId(distinctId);
    if (device !== undefined) {
      const user = await deviceOf(device);
      return user ? { userId: user, deviceIds: await devicesOf(user) } : { userId: null, deviceIds: [device] };
    }
    const linkedUser = await deviceOf(distinctId);
    const userId = linkedUser ?? distinctId;
    return { userId, deviceIds: await devicesOf(userId) };
  }

  async usersOfDevices(projectId: number, deviceIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const part of chunks([...new Set(deviceIds)], LOOKUP_CHUNK)) {
      const rows = await this.conn.rows<{ device_id: string; user_id: string }>(
        `SELECT device_id, argMin(user_id, ver) AS user_id FROM identity_links WHERE project_id = ${int(projectId)} AND device_id IN ${list(part.map(str))} GROUP BY device_id`,
      );
      for (const r of rows) out.set(r.device_id, r.user_id);
    }
    return out;
  }

  /** On a cluster, every shard must answer: one down fails the writes and reads that touch it. */
  async ping(): Promise<void> {
    const cluster = this.config.EVENT_STORE_CLUSTER;
    await this.conn.rows(cluster ? `SELECT count() FROM cluster(${str(cluster)}, system.one)` : 'SELECT 1');
  }

  async close(): Promise<void> {
    await this.conn.close();
  }
}

function rowKey(r: KeyRow): EventKey {
  return { event: r.event, distinctId: r.distinct_id, time: Number(r.time), insertId: r.insert_id };
}

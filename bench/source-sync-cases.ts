/**
 * Cases of bench/source-sync.bench.ts, each run in its own process: the same table in a MySQL
 * (MariaDB) database or a PostgreSQL schema read by (a) the bare client — every row streamed
 * and counted, nothing else: the most a sync could read at — and (b) an events sync from it
 * (warehouse-sync-cases.ts `sync`, SQLite store). The ratio (b)/(a) is the sync's cost over its
 * source's own read speed.
 */
import crypto from 'node:crypto';
import mysql from 'mysql2';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { BASE_MS, TABLE, type SyncCaseArgs, type SyncCaseResult } from './warehouse-sync-cases.js';

export { buildPostgresSource, dropPostgresSchema, floor, sync } from './warehouse-sync-cases.js';

/** Builds the source table in a fresh MariaDB/MySQL database (the SEQUENCE engine's seq_0_to_N); returns its URL. */
export async function buildMysqlSource(adminUrl: string, rows: number): Promise<{ url: string; database: string }> {
  const database = `whbench_${crypto.randomBytes(4).toString('hex')}`;
  const c = mysql.createConnection({ uri: adminUrl }).promise();
  await c.query(`CREATE DATABASE ${database} CHARACTER SET utf8mb4`);
  await c.query(
    `CREATE TABLE ${database}.${TABLE} (id BIGINT NOT NULL PRIMARY KEY, event TEXT NOT NULL, ts BIGINT NOT NULL, user_id TEXT, url TEXT, plan TEXT, amount DOUBLE)`,
  );
  await c.query(
    `INSERT INTO ${database}.${TABLE} SELECT seq, CONCAT('event_', seq % 7), ${BASE_MS} + seq * 1000, CONCAT('user-', seq % 5000), ` +
      `CONCAT('/p/', seq % 97), CONCAT('plan-', seq % 3), seq * 0.5 FROM ${database}.seq_0_to_${rows - 1}`,
  );
  await c.end();
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return { url: url.toString(), database };
}

export async function dropMysqlDatabase(adminUrl: string, database: string): Promise<void> {
  const c = mysql.createConnection({ uri: adminUrl }).promise();
  await c.query(`DROP DATABASE IF EXISTS ${database}`);
  await c.end();
}

/** (a) The bare client read of the whole table: rows streamed with the driver's own back-pressure. */
export async function bareRead(args: SyncCaseArgs): Promise<SyncCaseResult> {
  const src = args.source;
  const started = process.hrtime.bigint();
  let n = 0;
  if (src.type === 'mysql') {
    const c = mysql.createConnection({ uri: src.url, supportBigNumbers: true, bigNumberStrings: true, dateStrings: true });
    for await (const _row of c.query(`SELECT * FROM ${TABLE}`).stream({ highWaterMark: 2000 })) n += 1;
    await c.promise().end();
  } else if (src.type === 'postgres' || src.type === 'redshift') {
    const c = new pg.Client({ connectionString: src.url });
    await c.connect();
    await c.query('BEGIN READ ONLY');
    const cursor = c.query(new Cursor(`SELECT * FROM ${src.schema}.${TABLE}`));
    for (;;) {
      const rows = await cursor.read(2000);
      if (rows.length === 0) break;
      n += rows.length;
    }
    await cursor.close();
    await c.query('ROLLBACK');
    await c.end();
  } else throw new Error(`bareRead: ${src.type} is not a client-server source`);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { rows: n, seconds, stored: n };
}

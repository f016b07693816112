/**
 * `npm run bench`: runs every bench/*.bench.ts module and prints one table. Ratios are against
 * baselines measured in the same run, because this machine is noisy.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const here = path.dirname(fileURLToPath(import.meta.url));

function table(rows: BenchRow[]): string {
  const head = ['section', 'measurement', 'value', 'unit', 'ratio', 'peak RSS MB', 'note'];
  const body = rows.map((r) => [
    r.section,
    r.name,
    r.value >= 100 ? Math.round(r.value).toLocaleString('en-US') : r.value.toFixed(2),
    r.unit,
    r.ratio ?? '',
    r.peakRssMb === undefined ? '' : String(r.peakRssMb),
    r.note ?? '',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

async function main() {
  const only = process.argv[2];
  const files = fs
    .readdirSync(here)
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => !only || f.includes(only))
    .sort();
  const ctx: BenchContext = {
    scale: Number(process.env.BENCH_SCALE ?? '1'),
    pgUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    clickhouseUrl: process.env.BENCH_CLICKHOUSE_URL ?? 'clickhouse://default:@127.0.0.1:8123/',
    redisClusterNodes: process.env.BENCH_REDIS_CLUSTER_NODES ?? '127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103',
    tmpDir: fs.mkdtempSync(path.join(os.tmpdir(), 'analytics-bench-')),
    log: (msg) => process.stderr.write(`[bench] ${msg}\n`),
  };
  const rows: BenchRow[] = [];
  const loadAtStart = os.loadavg();
  for (const file of files) {
    const { bench } = (await import(pathToFileURL(path.join(here, file)).href)) as { bench: BenchModule };
    ctx.log(`${bench.title} (${file})`);
    rows.push(...(await bench.run(ctx)));
  }
  fs.rmSync(ctx.tmpDir, { recursive: true, force: true });
  process.stdout.write(`\n${table(rows)}\n`);
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
  process.stdout.write(
    `\nmachine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, scale ${ctx.scale}; ` +
      `load average (1, 5, 15 min) ${load(loadAtStart)} at the start, ${load(os.loadavg())} at the end\n`,
  );
  process.exit(0);
}

void main();

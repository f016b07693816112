// Lint with the one-way layering of ARCHITECTURE.md: imports point down, never up or sideways
// into transport. Each block forbids what a layer must not import.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const up = (dirs) => dirs.map((d) => ({ group: [`**/${d}/**`, `**/${d}/*`], message: `layering: this layer must not import ${d}/` }));
/** The use-case folders of ARCHITECTURE.md (services behind the app API). */
const SERVICES = ['accounts', 'experiments', 'migration', 'readback', 'warehouse'];
const libs = (names) => names.map((n) => ({ group: [n, `${n}/*`], message: `layering: ${n} is not allowed in this layer` }));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      'no-restricted-properties': 'off',
    },
  },
  // Bottom to top, as ARCHITECTURE.md "Layers" lists them; every src/ folder has a block.
  // config/ and src/lib/ import no layer but pure domain logic (config) or nothing (lib).
  { files: ['config/**/*.ts'], rules: restrict(up(['db', 'ingest', 'store', 'runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES])) },
  { files: ['src/lib/**/*.ts'], rules: restrict(up(['domain', 'db', 'ingest', 'store', 'runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES])) },
  {
    files: ['src/domain/**/*.ts'],
    rules: restrict([
      ...up(['db', 'ingest', 'store', 'runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES]),
      ...libs(['knex', 'express', 'bullmq', 'ioredis', 'pg', 'better-sqlite3']),
    ]),
  },
  {
    files: ['connectors/**/*.ts'],
    rules: restrict([...up(['db', 'ingest', 'store', 'runs', 'queue', 'http', 'bin', 'jobs', ...SERVICES]), ...libs(['knex', 'express', 'bullmq'])]),
  },
  { files: ['src/db/**/*.ts'], rules: restrict(up(['ingest', 'store', 'runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES])) },
  { files: ['src/store/**/*.ts'], rules: restrict(up(['ingest', 'runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES])) },
  { files: ['src/ingest/**/*.ts'], rules: restrict(up(['runs', 'queue', 'http', 'bin', 'jobs', 'connectors', ...SERVICES])) },
  { files: ['src/queue/**/*.ts'], rules: restrict(up(['ingest', 'store', 'runs', 'http', 'bin', 'jobs', ...SERVICES])) },
  { files: ['src/runs/**/*.ts'], rules: restrict(up(['http', 'bin', 'jobs', ...SERVICES])) },
  // Use cases behind the app API: called by src/http and jobs/, never calling them.
  { files: SERVICES.map((d) => `src/${d}/**/*.ts`), rules: restrict(up(['http', 'bin', 'jobs'])) },
  { files: ['src/http/**/*.ts'], rules: restrict(up(['bin', 'jobs'])) },
  // src/bin is the top: the only place that wires concrete dependencies, so it may import any layer.
  {
    // A kind's files never import the list of kinds (jobs/reconcile-sources.ts, jobs/index.ts):
    // that was the old cycle. Shared run types come from src/runs/.
    files: ['jobs/**/*.ts'],
    ignores: ['jobs/index.ts', 'jobs/reconcile-sources.ts', 'jobs/worker-runtime.ts'],
    rules: restrict([
      ...up(['http', 'bin']),
      { group: ['./reconcile-sources', './reconcile-sources.js', './index', './index.js'], message: 'import cycle: a run kind must not import the list of kinds; use src/runs/' },
    ]),
  },
  { files: ['jobs/index.ts', 'jobs/reconcile-sources.ts', 'jobs/worker-runtime.ts'], rules: restrict(up(['http', 'bin'])) },
  {
    // Only config/ reads the environment.
    files: ['src/**/*.ts', 'jobs/**/*.ts', 'connectors/**/*.ts'],
    ignores: ['src/bin/**'],
    rules: { 'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read config, not process.env' }] },
  },
);

// Lint with the one-way layering of ARCHITECTURE.md: imports point down, never up or sideways
// into transport. Each block forbids what a layer must not import.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const up = (dirs) => dirs.map((d) => ({ group: [`**/${d}/**`, `**/${d}/*`], message: `layering: this layer must not import ${d}/` }));
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
  {
    files: ['src/domain/**/*.ts'],
    rules: restrict([...up(['db', 'ingest', 'queue', 'http', 'bin', 'jobs', 'connectors']), ...libs(['knex', 'express', 'bullmq', 'ioredis', 'pg', 'better-sqlite3'])]),
  },
  {
    files: ['connectors/**/*.ts'],
    rules: restrict([...up(['db', 'ingest', 'queue', 'http', 'bin', 'jobs']), ...libs(['knex', 'express', 'bullmq'])]),
  },
  { files: ['src/db/**/*.ts'], rules: restrict(up(['ingest', 'queue', 'http', 'bin', 'jobs'])) },
  { files: ['src/ingest/**/*.ts'], rules: restrict(up(['queue', 'http', 'bin', 'jobs'])) },
  { files: ['src/queue/**/*.ts'], rules: restrict(up(['http', 'bin', 'jobs'])) },
  { files: ['src/http/**/*.ts'], rules: restrict(up(['bin', 'jobs'])) },
  { files: ['jobs/**/*.ts'], rules: restrict(up(['http', 'bin'])) },
  {
    // Only config/ reads the environment.
    files: ['src/**/*.ts', 'jobs/**/*.ts', 'connectors/**/*.ts'],
    ignores: ['src/bin/**'],
    rules: { 'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read config, not process.env' }] },
  },
);

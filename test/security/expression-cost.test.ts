/**
 * Hostile tenant, finding 8: `where` / `on` expressions had no cost bound. The parser caps length,
 * tokens, nesting and tree depth (a 400 in each surface's error shape beyond), and evaluation work
 * per record is bounded: object comparisons serialise each value once, string `+` stops growing at
 * MAX_STRING_RESULT.
 */
import { describe, expect, it } from 'vitest';
import { compileValue, compileWhere, MAX_STRING_RESULT } from '../../src/domain/where-evaluate.js';
import { ExpressionSyntaxError, MAX_EXPRESSION_TREE_DEPTH, parseExpression } from '../../src/domain/where-expression.js';
import { tenantApp } from './tenant-app.js';

const chain = (n: number, op: string) => Array.from({ length: n }, (_, i) => `properties["p${i % 10}"] == ${i}`).join(` ${op} `);

describe('expression cost bounds (parser)', () => {
  it('refuses a long left-leaning or/and/+ chain that nests deeper than the tree limit', () => {
    for (const op of ['or', 'and']) expect(() => parseExpression(chain(MAX_EXPRESSION_TREE_DEPTH + 5, op)), op).toThrow(/operations deep/);
    expect(() => parseExpression(Array.from({ length: 600 }, () => '1').join('+'))).toThrow(ExpressionSyntaxError);
  });

  it('refuses more tokens than the limit even within the length limit', () => {
    expect(() => parseExpression(`[${Array.from({ length: 2500 }, () => '1').join(',')}]`)).toThrow(/tokens/);
  });

  it('still accepts ordinary expressions, including a modest chain and an in-list', () => {
    expect(() => parseExpression(chain(40, 'or'))).not.toThrow();
    expect(() => parseExpression(`properties["x"] in [${Array.from({ length: 300 }, (_, i) => i).join(',')}]`)).not.toThrow();
  });
});

describe('expression cost bounds (evaluation)', () => {
  it('string + stops growing past the cap instead of building huge strings per record', () => {
    const big = 'x'.repeat(40_000);
    // Each level would double: 2^8 × 40 kB = 10 MB per record without the cap.
    let e = 'properties["s"]';
    for (let i = 0; i < 8; i++) e = `(${e} + ${e})`;
    const started = performance.now();
    const v = compileValue(e)({ s: big });
    expect(v).toBeUndefined();
    expect(compileValue('properties["s"] + "y"')({ s: 'x'.repeat(MAX_STRING_RESULT - 1) })).toHaveLength(MAX_STRING_RESULT);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('comparing a large object many times serialises it once', () => {
    const big = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, { v: i, s: 'abc' }]));
    const e = Array.from({ length: 120 }, () => 'properties["o"] == properties["o2"]').join(' and ');
    const where = compileWhere(e);
    const props = { o: big, o2: structuredClone(big) };
    const started = performance.now();
    for (let r = 0; r < 5; r++) expect(where(props)).toBe(true);
    // Quadratic-ish before: 120 comparisons × 2 serialisations of a 20,000-key object per record.
    expect(performance.now() - started).toBeLessThan(1500);
  });
});

describe('expression limits over HTTP: 400 in each surface shape', () => {
  const w = tenantApp();

  const deep = chain(MAX_EXPRESSION_TREE_DEPTH + 5, 'or');
  const q = (o: Record<string, string>) => new URLSearchParams({ project_id: String(w.p.id), from_date: '2026-01-01', to_date: '2026-01-02', ...o }).toString();

  it('/api/2.0/export where', async () => {
    const res = await fetch(`${w.app.url}/api/2.0/export?${q({ where: deep })}`, { headers: { authorization: w.p.basic } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: expect.stringMatching(/invalid 'where' expression: .*operations deep/) });
  });

  it('/api/2.0/segmentation on and where', async () => {
    for (const param of ['on', 'where']) {
      const res = await fetch(`${w.app.url}/api/2.0/segmentation?${q({ event: 'e', [param]: deep })}`, { headers: { authorization: w.p.basic } });
      expect(res.status, param).toBe(400);
      expect(await res.json()).toMatchObject({ error: expect.stringMatching(new RegExp(`invalid '${param}' expression`)) });
    }
  });
});

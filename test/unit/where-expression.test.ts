import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileValue, compileWhere } from '../../src/domain/where-evaluate.js';
import { ExpressionSyntaxError, MAX_EXPRESSION_DEPTH, parseExpression } from '../../src/domain/where-expression.js';

const props = {
  $source: 'warehouse-import',
  $import: true,
  plan: 'pro',
  n: 5,
  price: 12.5,
  zero: 0,
  empty: '',
  nothing: null,
  tags: ['a', 'b', 'c'],
  ids: [1, 2, 3],
  campaign: 'Brand-Summer',
  numText: '42',
  nested: { x: 1 },
};

describe('where expressions: evaluation', () => {
  it.each([
    ['properties["$source"] == "warehouse-import"', true],
    ["properties['plan'] == 'pro'", true],
    ['properties["plan"] == "free"', false],
    ['properties["plan"] != "free"', true],
    ['properties["missing"] == "x"', false],
    ['properties["missing"] != "x"', true],
    ['properties["n"] == 5', true],
    ['properties["n"] == "5"', false],
    ['properties["numText"] == 42', false],
    ['number(properties["numText"]) == 42', true],
    ['string(properties["n"]) == "5"', true],
    ['properties["$import"] == true', true],
    ['properties["$import"] == false', false],
    ['properties["$import"]', true],
    ['properties["zero"]', false],
    ['properties["empty"]', false],
    ['properties["n"] > 4 and properties["n"] < 6', true],
    ['properties["n"] >= 5 and properties["n"] <= 5', true],
    ['properties["n"] > 5', false],
    ['properties["price"] > 12.49', true],
    ['properties["plan"] > "a"', true],
    ['properties["plan"] > 1', false],
    ['properties["missing"] > 1', false],
    ['properties["plan"] == "free" or properties["n"] == 5', true],
    ['properties["plan"] == "free" or properties["n"] == 6', false],
    ['not properties["plan"] == "free"', true],
    ['not (properties["plan"] == "pro" and properties["n"] == 5)', false],
    ['not properties["missing"]', true],
    ['defined(properties["plan"])', true],
    ['defined(properties["missing"])', false],
    ['defined(properties["nothing"])', false],
    ['not defined(properties["missing"])', true],
    ['"b" in properties["tags"]', true],
    ['"z" in properties["tags"]', false],
    ['2 in properties["ids"]', true],
    ['properties["n"] in [1, 5, 9]', true],
    ['properties["n"] in []', false],
    ['"Summer" in properties["campaign"]', true],
    ['"Winter" in properties["campaign"]', false],
    ['properties["n"] + 1 == 6', true],
    ['properties["n"] * 2 - 1 == 9', true],
    ['properties["n"] % 2 == 1', true],
    ['properties["n"] / 0 == 1', false],
    ['-properties["n"] == -5', true],
    ['floor(properties["price"]) == 12', true],
    ['ceil(properties["price"]) == 13', true],
    ['round(properties["price"]) == 13', true],
    ['boolean(properties["zero"]) == false', true],
    ['properties["nested"] == properties["nested"]', true],
    ['properties["tags"] == ["a", "b", "c"]', true],
    ['properties["constructor"] == properties["constructor"]', false],
    ['defined(properties["__proto__"])', false],
    ['properties["plan"] == "pro" and properties["n"] == 5 or properties["x"] == 1', true],
    ['"a\\"b" == \'a"b\'', true],
    ['"\\u0041" == "A"', true],
    ['1e3 == 1000', true],
    ['true', true],
    ['null == null', true],
  ])('%s → %s', (src, expected) => {
    expect(compileWhere(src)(props)).toBe(expected);
  });

  it('binds and tighter than or, comparisons tighter than not', () => {
    // false and false or true → (false and false) or true
    expect(compileWhere('properties["n"] == 1 and properties["n"] == 2 or properties["n"] == 5')(props)).toBe(true);
    // true or false and false → true or (false and false)
    expect(compileWhere('properties["n"] == 5 or properties["n"] == 2 and properties["n"] == 3')(props)).toBe(true);
    expect(compileValue('1 + 2 * 3')({})).toBe(7);
    expect(compileValue('(1 + 2) * 3')({})).toBe(9);
    expect(compileValue('"a" + "b"')({})).toBe('ab');
  });
});

describe('where expressions: syntax errors carry a position', () => {
  it.each([
    ['properties["a"] ==', 18],
    ['properties["a" == "b"', 15],
    ['properties[a] == 1', 11],
    ['(properties["a"] == 1', 21],
    ['properties["a"] = 1', 16],
    ['properties["a"] == "unterminated', 19],
    ['foo == 1', 0],
    ['properties["a"] == 1 junk', 21],
    ['properties["a"] == #', 19],
    ['"bad \\q escape"', 5],
    ['', 0],
    ['   ', 0],
    ['[1, 2', 5],
    ['defined properties["a"]', 8],
  ])('%j fails at %i', (src, position) => {
    try {
      parseExpression(src);
      expect.unreachable('should not parse');
    } catch (err) {
      expect(err).toBeInstanceOf(ExpressionSyntaxError);
      expect((err as ExpressionSyntaxError).position).toBe(position);
      expect((err as Error).message).toMatch(/at position \d+$/);
    }
  });

  it('refuses nesting deeper than the limit instead of overflowing the stack', () => {
    const deep = `${'('.repeat(MAX_EXPRESSION_DEPTH + 1)}1${')'.repeat(MAX_EXPRESSION_DEPTH + 1)}`;
    expect(() => parseExpression(deep)).toThrow(ExpressionSyntaxError);
    expect(() => parseExpression(`${'not '.repeat(200)}true`)).toThrow(/nests deeper/);
    const ok = `${'('.repeat(10)}1${')'.repeat(10)}`;
    expect(compileValue(ok)({})).toBe(1);
  });

  it('refuses over-long input', () => {
    expect(() => parseExpression(`"${'x'.repeat(20_000)}"`)).toThrow(/longer than/);
  });
});

describe('where expressions: properties', () => {
  it('any string either parses or throws ExpressionSyntaxError — never anything else', () => {
    const alphabet = fc.constantFrom(...'properties[]()"\' =!<>andortin012.5+-*/%defined,truefalse\\u'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: alphabet, maxLength: 60 })), (src) => {
        try {
          const p = compileWhere(src);
          expect(typeof p(props)).toBe('boolean');
        } catch (err) {
          expect(err).toBeInstanceOf(ExpressionSyntaxError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('== on a string property matches exactly the records holding that value, and != is its complement', () => {
    fc.assert(
      fc.property(fc.string(), fc.array(fc.option(fc.string(), { nil: undefined })), (value, stored) => {
        const eq = compileWhere(`properties["k"] == ${JSON.stringify(value)}`);
        const ne = compileWhere(`properties["k"] != ${JSON.stringify(value)}`);
        for (const s of stored) {
          const rec = s === undefined ? {} : { k: s };
          expect(eq(rec)).toBe(s === value);
          expect(ne(rec)).toBe(!eq(rec));
        }
      }),
    );
  });

  it('property names round-trip through string escaping', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer(), (name, v) => {
        expect(compileWhere(`properties[${JSON.stringify(name)}] == ${v}`)({ [name]: v })).toBe(true);
      }),
    );
  });
});

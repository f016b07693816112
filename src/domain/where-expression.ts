/**
 * Mixpanel's segmentation expression language, as used by `where` (and `on`) on the read-back
 * APIs: a tokenizer and a recursive-descent parser producing an AST. Pure; evaluation lives in
 * where-evaluate.ts. Grammar (loosest binding first):
 *
 *   or      := and ('or' and)*
 *   and     := not ('and' not)*
 *   not     := 'not' not | compare
 *   compare := additive (('=='|'!='|'>'|'>='|'<'|'<='|'in') additive)?
 *   additive:= mult (('+'|'-') mult)*
 *   mult    := unary (('*'|'/'|'%') unary)*
 *   unary   := '-' unary | primary
 *   primary := 'properties' '[' string ']' | fn '(' or ')' | '(' or ')' | '[' list ']'
 *            | string | number | 'true' | 'false' | 'null'
 *   fn      := defined | boolean | number | string | floor | round | ceil
 *
 * Errors carry the 0-based character position so the API can say where the mistake is.
 */

import { ownValue } from '../lib/own.js';
export type BinaryOp = '==' | '!=' | '>' | '>=' | '<' | '<=' | 'in' | 'and' | 'or' | '+' | '-' | '*' | '/' | '%';
export type FunctionName = 'defined' | 'boolean' | 'number' | 'string' | 'floor' | 'round' | 'ceil';

export type Expr =
  | { kind: 'literal'; value: string | number | boolean | null }
  | { kind: 'property'; name: string }
  | { kind: 'list'; items: Expr[] }
  | { kind: 'not'; operand: Expr }
  | { kind: 'negate'; operand: Expr }
  | { kind: 'binary'; op: BinaryOp; left: Expr; right: Expr }
  | { kind: 'call'; fn: FunctionName; arg: Expr };

export class ExpressionSyntaxError extends Error {
  constructor(
    message: string,
    /** 0-based character offset in the expression. */
    readonly position: number,
  ) {
    super(`${message} at position ${position}`);
    this.name = 'ExpressionSyntaxError';
  }
}

/**
 * Cost bounds, so one request's expression cannot make the service (or the database it is
 * compiled for) do unbounded work: longer input is refused outright; so is deeper explicit
 * nesting (the parser recurses), more tokens (the AST's size, hence the work per record), and a
 * deeper tree (left-leaning `a or b or c …` chains count too: evaluators and SQL engines recurse
 * on it — SQLite refuses expressions deeper than 1000).
 */
export const MAX_EXPRESSION_LENGTH = 10_000;
export const MAX_EXPRESSION_DEPTH = 64;
export const MAX_EXPRESSION_TOKENS = 2_000;
export const MAX_EXPRESSION_TREE_DEPTH = 256;

type Token =
  | { type: 'string'; value: string; pos: number }
  | { type: 'number'; value: number; pos: number }
  | { type: 'word'; value: string; pos: number }
  | { type: 'punct'; value: string; pos: number }
  | { type: 'end'; pos: number };

const PUNCT = ['==', '!=', '>=', '<=', '>', '<', '(', ')', '[', ']', ',', '+', '-', '*', '/', '%'];
const FUNCTIONS = new Set<string>(['defined', 'boolean', 'number', 'string', 'floor', 'round', 'ceil']);
const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', '/': '/', n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

function readString(src: string, start: number): { value: string; end: number } {
  const quote = src[start]!;
  let out = '';
  let i = start + 1;
  while (i < src.length) {
    const c = src[i]!;
    if (c === quote) return { value: out, end: i + 1 };
    if (c === '\\') {
      const e = src[i + 1];
      if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
        out += String.fromCharCode(parseInt(src.slice(i + 2, i + 6), 16));
        i += 6;
        continue;
      }
      const escaped = e === undefined ? undefined : ownValue(ESCAPES, e);
      if (escaped === undefined) throw new ExpressionSyntaxError('invalid escape in string', i);
      out += escaped;
      i += 2;
      continue;
    }
    out += c;
    i += 1;
  }
  throw new ExpressionSyntaxError('unterminated string', start);
}

export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    if (c === '"' || c === "'") {
      const { value, end } = readString(src, i);
      tokens.push({ type: 'string', value, pos: i });
      i = end;
      continue;
    }
    const num = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i, i + 64));
    if (num) {
      tokens.push({ type: 'number', value: Number(num[0]), pos: i });
      i += num[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 256));
    if (word) {
      tokens.push({ type: 'word', value: word[0], pos: i });
      i += word[0].length;
      continue;
    }
    const p = PUNCT.find((op) => src.startsWith(op, i));
    if (!p) throw new ExpressionSyntaxError(`unexpected character '${c}'`, i);
    tokens.push({ type: 'punct', value: p, pos: i });
    i += p.length;
  }
  if (tokens.length > MAX_EXPRESSION_TOKENS) throw new ExpressionSyntaxError(`expression has more than ${MAX_EXPRESSION_TOKENS} tokens`, src.length);
  tokens.push({ type: 'end', pos: src.length });
  return tokens;
}

function describe(t: Token): string {
  if (t.type === 'end') return 'end of expression';
  if (t.type === 'string') return `string ${JSON.stringify(t.value)}`;
  return `'${String(t.value)}'`;
}

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.i]!;
  }
  private next(): Token {
    return this.tokens[this.i++]!;
  }
  private isWord(value: string): boolean {
    const t = this.peek();
    return t.type === 'word' && t.value === value;
  }
  private isPunct(value: string): boolean {
    const t = this.peek();
    return t.type === 'punct' && t.value === value;
  }
  private expectPunct(value: string): void {
    const t = this.next();
    if (t.type !== 'punct' || t.value !== value) throw new ExpressionSyntaxError(`expected '${value}' but found ${describe(t)}`, t.pos);
  }
  private nest<T>(pos: number, f: () => T): T {
    if (++this.depth > MAX_EXPRESSION_DEPTH) throw new ExpressionSyntaxError(`expression nests deeper than ${MAX_EXPRESSION_DEPTH}`, pos);
    try {
      return f();
    } finally {
      this.depth -= 1;
    }
  }

  parse(): Expr {
    const expr = this.or();
    const t = this.peek();
    if (t.type !== 'end') throw new ExpressionSyntaxError(`unexpected ${describe(t)}`, t.pos);
    return expr;
  }

  private or(): Expr {
    let left = this.and();
    while (this.isWord('or')) {
      this.next();
      left = { kind: 'binary', op: 'or', left, right: this.and() };
    }
    return left;
  }
  private and(): Expr {
    let left = this.not();
    while (this.isWord('and')) {
      this.next();
      left = { kind: 'binary', op: 'and', left, right: this.not() };
    }
    return left;
  }
  private not(): Expr {
    if (this.isWord('not')) {
      const t = this.next();
      return this.nest(t.pos, () => ({ kind: 'not', operand: this.not() }));
    }
    return this.compare();
  }
  private compare(): Expr {
    const left = this.additive();
    const t = this.peek();
    const op =
      t.type === 'punct' && ['==', '!=', '>', '>=', '<', '<='].includes(t.value)
        ? (t.value as BinaryOp)
        : t.type === 'word' && t.value === 'in'
          ? 'in'
          : undefined;
    if (!op) return left;
    this.next();
    return { kind: 'binary', op, left, right: this.additive() };
  }
  private additive(): Expr {
    let left = this.mult();
    while (this.isPunct('+') || this.isPunct('-')) {
      const op = (this.next() as { value: string }).value as BinaryOp;
      left = { kind: 'binary', op, left, right: this.mult() };
    }
    return left;
  }
  private mult(): Expr {
    let left = this.unary();
    while (this.isPunct('*') || this.isPunct('/') || this.isPunct('%')) {
      const op = (this.next() as { value: string }).value as BinaryOp;
      left = { kind: 'binary', op, left, right: this.unary() };
    }
    return left;
  }
  private unary(): Expr {
    if (this.isPunct('-')) {
      const t = this.next();
      return this.nest(t.pos, () => ({ kind: 'negate', operand: this.unary() }));
    }
    return this.primary();
  }
  private primary(): Expr {
    const t = this.next();
    switch (t.type) {
      case 'string':
        return { kind: 'literal', value: t.value };
      case 'number':
        return { kind: 'literal', value: t.value };
      case 'punct':
        if (t.value === '(') {
          const inner = this.nest(t.pos, () => this.or());
          this.expectPunct(')');
          return inner;
        }
        if (t.value === '[') return this.nest(t.pos, () => this.list());
        break;
      case 'word':
        if (t.value === 'true' || t.value === 'false') return { kind: 'literal', value: t.value === 'true' };
        if (t.value === 'null') return { kind: 'literal', value: null };
        if (t.value === 'properties') {
          this.expectPunct('[');
          const name = this.next();
          if (name.type !== 'string') throw new ExpressionSyntaxError(`expected a quoted property name but found ${describe(name)}`, name.pos);
          this.expectPunct(']');
          return { kind: 'property', name: name.value };
        }
        if (FUNCTIONS.has(t.value)) {
          this.expectPunct('(');
          const arg = this.nest(t.pos, () => this.or());
          this.expectPunct(')');
          return { kind: 'call', fn: t.value as FunctionName, arg };
        }
        throw new ExpressionSyntaxError(`unknown name '${t.value}' (use properties["${t.value}"] for a property)`, t.pos);
      case 'end':
        break;
    }
    throw new ExpressionSyntaxError(`unexpected ${describe(t)}`, t.pos);
  }
  private list(): Expr {
    const items: Expr[] = [];
    if (this.isPunct(']')) {
      this.next();
      return { kind: 'list', items };
    }
    for (;;) {
      items.push(this.or());
      if (this.isPunct(',')) {
        this.next();
        continue;
      }
      this.expectPunct(']');
      return { kind: 'list', items };
    }
  }
}

/** Parses an expression; throws ExpressionSyntaxError (with a position) on any mistake. */
export function parseExpression(src: string): Expr {
  if (src.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionSyntaxError(`expression is longer than ${MAX_EXPRESSION_LENGTH} characters`, MAX_EXPRESSION_LENGTH);
  }
  if (src.trim() === '') throw new ExpressionSyntaxError('expression is empty', 0);
  const expr = new Parser(tokenize(src)).parse();
  if (treeDepth(expr) > MAX_EXPRESSION_TREE_DEPTH) {
    throw new ExpressionSyntaxError(`expression is more than ${MAX_EXPRESSION_TREE_DEPTH} operations deep (split long and/or chains with parentheses or use 'in [...]')`, 0);
  }
  return expr;
}

/** The tree's depth, without recursion (so any tree the parser built can be measured). */
function treeDepth(root: Expr): number {
  let max = 0;
  const stack: [Expr, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [e, d] = stack.pop()!;
    if (d > max) max = d;
    switch (e.kind) {
      case 'list':
        for (const item of e.items) stack.push([item, d + 1]);
        break;
      case 'not':
      case 'negate':
        stack.push([e.operand, d + 1]);
        break;
      case 'call':
        stack.push([e.arg, d + 1]);
        break;
      case 'binary':
        stack.push([e.left, d + 1], [e.right, d + 1]);
        break;
      default:
        break;
    }
  }
  return max;
}

/** Whether the expression reads any property (else it is a constant). */
export function hasProperty(e: Expr): boolean {
  switch (e.kind) {
    case 'literal':
      return false;
    case 'property':
      return true;
    case 'list':
      return e.items.some(hasProperty);
    case 'not':
    case 'negate':
      return hasProperty(e.operand);
    case 'call':
      return hasProperty(e.arg);
    case 'binary':
      return hasProperty(e.left) || hasProperty(e.right);
  }
}

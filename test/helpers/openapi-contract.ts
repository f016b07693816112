/**
 * Calls the running app and checks every response against the OpenAPI document it serves: the
 * response schema is looked up by path template, method and status (else `default`) and applied
 * with ajv in strict mode, so an extra field, a missing one or a wrong type throws.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { OpenApiDocument, ResponseOrRef } from '../../src/http/openapi/types.js';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => void;

export interface CallOptions {
  /** An Authorization header value. */
  auth?: string;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (malformed JSON, huge bodies, gzip). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface ContractResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

const pointerToken = (s: string) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'));

export class ContractClient {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly prefix: string;
  private readonly templates: { template: string; regex: RegExp }[];
  /** Every (method path status) checked, for tests that assert coverage. */
  readonly seen = new Set<string>();

  constructor(
    readonly doc: OpenApiDocument,
    readonly baseUrl: string,
  ) {
    this.ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'security', 'paths', 'components']);
    this.ajv.addSchema(doc as object, 'openapi.json');
    this.prefix = new URL(doc.servers[0]!.url, 'http://x').pathname.replace(/\/$/, '');
    this.templates = Object.keys(doc.paths).map((template) => ({
      template,
      regex: new RegExp(
        `^${template
          .split('/')
          .map((seg) => (/^\{[^}]+\}$/.test(seg) ? '[^/]+' : seg.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
          .join('/')}$`,
      ),
    }));
  }

  static async load(baseUrl: string): Promise<ContractClient> {
    const res = await fetch(`${baseUrl}/api/app/openapi.json`);
    if (res.status !== 200) throw new Error(`openapi.json answered ${res.status}`);
    return new ContractClient((await res.json()) as OpenApiDocument, baseUrl);
  }

  /** The validator for a response, or an error naming what the document lacks. */
  validatorFor(method: string, path: string, status: number): ValidateFunction {
    const pathname = path.split('?')[0]!;
    if (!pathname.startsWith(this.prefix)) throw new Error(`${path} is outside the documented server ${this.prefix}`);
    const local = pathname.slice(this.prefix.length);
    const match = this.templates.find((t) => t.regex.test(local));
    if (!match) throw new Error(`no documented path matches ${local}`);
    const m = method.toLowerCase();
    const op = (this.doc.paths[match.template] as Record<string, { responses: Record<string, ResponseOrRef> }>)[m];
    if (!op) throw new Error(`${method} ${match.template} is not documented`);
    const key = op.responses[String(status)] ? String(status) : 'default';
    let response = op.responses[key];
    if (!response) throw new Error(`${method} ${match.template} documents no ${status} (and no default)`);
    let pointer = `/paths/${pointerToken(match.template)}/${m}/responses/${key}`;
    if ('$ref' in response) {
      pointer = response.$ref.replace(/^#/, '');
      response = pointer
        .split('/')
        .slice(1)
        .reduce<any>((node, token) => node[decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    if (!('content' in response!) || !response!.content?.['application/json']) {
      throw new Error(`${method} ${match.template} ${key} has no application/json schema`);
    }
    const schemaRef = `openapi.json#${pointer}/content/${pointerToken('application/json')}/schema`;
    this.seen.add(`${m} ${match.template} ${status}`);
    let v = this.validators.get(schemaRef);
    if (!v) {
      v = this.ajv.getSchema(schemaRef);
      if (!v) throw new Error(`cannot compile ${schemaRef}`);
      this.validators.set(schemaRef, v);
    }
    return v;
  }

  /** Throws unless `body` is what the document promises for this call. */
  check(method: string, path: string, status: number, body: unknown): void {
    const v = this.validatorFor(method, path, status);
    if (!v(body)) {
      const errors = (v.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
      throw new Error(`${method} ${path} → ${status} breaks the OpenAPI document:\n  ${errors.join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 500)}`);
    }
  }

  async call<T = any>(method: string, path: string, options: CallOptions = {}): Promise<ContractResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth) headers.authorization = options.auth;
    let body: BodyInit | undefined = Buffer.isBuffer(options.raw) ? Uint8Array.from(options.raw) : options.raw;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    if (!/^application\/json/.test(res.headers.get('content-type') ?? '')) {
      throw new Error(`${method} ${path} → ${res.status} answered ${res.headers.get('content-type')}: ${text.slice(0, 200)}`);
    }
    const parsed = JSON.parse(text) as T;
    this.check(method, path, res.status, parsed);
    return { status: res.status, body: parsed, headers: res.headers };
  }
}

/**
 * The slice of OpenAPI 3.1 (and of its JSON Schema 2020-12 dialect) our documents use, typed so
 * a misspelt keyword is a compile error rather than a silently ignored one.
 */

export type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export interface JsonSchema {
  $ref?: string;
  type?: JsonType | JsonType[];
  format?: 'uuid' | 'date-time' | 'date' | 'email';
  description?: string;
  enum?: readonly (string | number | boolean | null)[];
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean | JsonSchema;
  minProperties?: number;
  items?: JsonSchema;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  oneOf?: JsonSchema[];
  examples?: unknown[];
}

export interface MediaType {
  schema: JsonSchema;
}

export interface ResponseObject {
  description: string;
  content?: Record<string, MediaType>;
}

export type ResponseOrRef = ResponseObject | { $ref: string };

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  parameters?: ParameterObject[];
  requestBody?: { required: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseOrRef>;
  security?: Record<string, string[]>[];
}

export type PathItem = Partial<Record<'get' | 'post' | 'patch' | 'put' | 'delete', OperationObject>> & {
  parameters?: ParameterObject[];
};

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description?: string };
  servers: { url: string; description?: string }[];
  tags: { name: string; description?: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, { type: 'http'; scheme: 'basic'; description?: string }>;
  };
}

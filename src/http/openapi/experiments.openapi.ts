/**
 * The OpenAPI 3.1 description of the experiments API (version 1.0.0), served at
 * GET /api/app/openapi.json. Tests validate every experiments response against it with ajv, so
 * this document and the handlers cannot drift apart unnoticed.
 */
import { experimentSchemas } from './experiments.schemas.js';
import type { OpenApiDocument, OperationObject, ParameterObject, ResponseOrRef } from './types.js';

const TAG = 'Experiment Management';

const workspaceId: ParameterObject = {
  name: 'workspace_id',
  in: 'path',
  required: true,
  description: 'the workspace; the caller needs a role on its project',
  schema: { type: 'integer' },
};
const experimentId: ParameterObject = {
  name: 'experiment_id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};

const json = (name: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } });
const response = (ref: string): ResponseOrRef => ({ $ref: `#/components/responses/${ref}` });
const body = (schema: string, required = true) => ({ required, content: json(schema) });

/** 401, 403 and the {status,type,error} shape for every other failure. */
const failures = (...statuses: string[]): Record<string, ResponseOrRef> => ({
  '401': response('Unauthorized'),
  '403': response('Forbidden'),
  ...Object.fromEntries(statuses.map((s) => [s, response('Error')])),
  default: response('Error'),
});

const one = { description: 'the experiment', content: json('SingleExperimentApiResponse') };

function action(operationId: string, summary: string, description: string, requestSchema = 'EmptyRequest'): { post: OperationObject } {
  return {
    post: {
      operationId,
      summary,
      description: `${description} Needs can_update_restricted. An illegal transition answers 400 with type "invalid_transition" naming the current state.`,
      tags: [TAG],
      requestBody: body(requestSchema, requestSchema !== 'EmptyRequest'),
      responses: { '200': one, ...failures('400', '404', '413', '415') },
    },
  };
}

export const experimentsOpenApi: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Experiments API',
    version: '1.0.0',
    description: 'Create, manage and control experiments. Authenticate with a service account over HTTP Basic.',
  },
  servers: [{ url: '/api/app' }],
  tags: [{ name: TAG }],
  security: [{ ServiceAccount: [] }],
  paths: {
    '/workspaces/{workspace_id}/experiments': {
      parameters: [workspaceId],
      get: {
        operationId: 'list-experiments',
        summary: 'List experiments',
        description: 'Every experiment of the workspace that is not soft-deleted and that the caller may view, newest first.',
        tags: [TAG],
        responses: {
          '200': {
            description: 'the experiments',
            content: {
              'application/json': {
                schema: {
                  oneOf: [
                    { $ref: '#/components/schemas/ListExperimentApiResponse' },
                    { $ref: '#/components/schemas/ExperimentApiErrorResponse' },
                  ],
                },
              },
            },
          },
          ...failures('400'),
        },
      },
      post: {
        operationId: 'create-experiment',
        summary: 'Create an experiment',
        description: 'Creates a draft experiment. Owners, admins and analysts may create; consumers may not.',
        tags: [TAG],
        requestBody: body('CreateExperimentRequest'),
        responses: { '201': { description: 'the new experiment', content: json('SingleExperimentApiResponse') }, ...failures('400', '413', '415') },
      },
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}': {
      parameters: [workspaceId, experimentId],
      get: {
        operationId: 'get-experiment',
        summary: 'Get an experiment',
        description: 'Soft-deleted experiments, and private ones the caller may not view, are 404.',
        tags: [TAG],
        responses: { '200': one, ...failures('400', '404') },
      },
      patch: {
        operationId: 'update-experiment',
        summary: 'Update an experiment',
        description:
          'Basic fields need can_update_basic; variants, metrics, settings, caches and feature_flag need can_update_restricted; ' +
          'is_shared_with_project needs can_share to share and can_update_visibility to make private.',
        tags: [TAG],
        requestBody: body('UpdateExperimentRequest'),
        responses: { '200': one, ...failures('400', '404', '413', '415') },
      },
      delete: {
        operationId: 'delete-experiment',
        summary: 'Soft-delete an experiment',
        description: 'Sets deleted; the experiment then leaves every listing and lookup. Needs can_update_restricted.',
        tags: [TAG],
        responses: { '200': { description: 'the experiment as deleted', content: json('SingleExperimentApiResponse') }, ...failures('400', '404') },
      },
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}/launch': {
      parameters: [workspaceId, experimentId],
      ...action('launch-experiment', 'Launch an experiment', 'draft → active; sets start_date.'),
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}/force_conclude': {
      parameters: [workspaceId, experimentId],
      ...action('force-conclude-experiment', 'Conclude an experiment now', 'active → concluded; sets end_date.'),
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}/decide': {
      parameters: [workspaceId, experimentId],
      ...action(
        'decide-experiment',
        'Record the decision',
        'concluded → success (success: true) or fail (success: false); the decision is kept in settings.decision.',
        'DecideExperimentRequest',
      ),
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}/archive': {
      parameters: [workspaceId, experimentId],
      ...action(
        'archive-experiment',
        'Archive an experiment',
        'Any status but active; sets settings.archived to true. An archived experiment takes no lifecycle action but unarchive.',
      ),
    },
    '/workspaces/{workspace_id}/experiments/{experiment_id}/unarchive': {
      parameters: [workspaceId, experimentId],
      ...action('unarchive-experiment', 'Unarchive an experiment', 'Clears settings.archived; the status is unchanged.'),
    },
  },
  components: {
    schemas: experimentSchemas,
    responses: {
      Unauthorized: { description: 'authentication failed', content: json('ExperimentAuthErrorResponse') },
      Forbidden: { description: 'authenticated but not allowed', content: json('ExperimentAuthErrorResponse') },
      Error: { description: 'bad input, unknown id, illegal transition, or another failure', content: json('ExperimentApiErrorResponse') },
    },
    securitySchemes: {
      ServiceAccount: { type: 'http', scheme: 'basic', description: 'service account username and secret' },
    },
  },
};

/** The document as served: the server URL is this deployment's application API base. */
export function servedExperimentsOpenApi(baseUrl: string): OpenApiDocument {
  return { ...experimentsOpenApi, servers: [{ url: baseUrl }] };
}

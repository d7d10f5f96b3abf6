// Public discovery documents: sign-in configuration, RFC 9728 resource metadata, OpenAPI.
import { authConfigDocument, protectedResourceDocument, publicBaseUrl } from '../../auth/discovery-docs.ts';
import { buildOpenApiDocument } from '../openapi.ts';
import { json } from '../responses.ts';
import type { Services } from '../services.ts';
import type { Operation } from '../types.ts';

export const discoveryOperations: Operation<Services>[] = [
  {
    id: 'getAuthConfig',
    method: 'GET',
    path: '/svc/auth/config',
    access: { kind: 'public' },
    summary: 'Sign-in configuration: mode, issuer, audience and the flows offered',
    async handle(context) {
      const c = context.services.config;
      return json(
        authConfigDocument({
          mode: c.authMode,
          issuer: c.oidcIssuer,
          audience: c.oidcAudience,
          passwordFlow: c.passwordFlow,
        }),
      );
    },
  },
  {
    id: 'getProtectedResourceMetadata',
    method: 'GET',
    path: '/.well-known/oauth-protected-resource',
    access: { kind: 'public' },
    summary: 'OAuth 2.0 protected resource metadata (RFC 9728)',
    async handle(context) {
      const c = context.services.config;
      return json(
        protectedResourceDocument({
          resource: publicBaseUrl(context.request.headers, context.services.restBaseUrl()),
          issuer: c.oidcIssuer,
          audience: c.oidcAudience,
        }),
      );
    },
  },
  {
    id: 'getOpenApi',
    method: 'GET',
    path: '/openapi.json',
    access: { kind: 'public' },
    summary: 'The OpenAPI 3.1 document of this API',
    async handle() {
      return json(buildOpenApiDocument());
    },
  },
];

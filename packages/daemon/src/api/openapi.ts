// Builds the OpenAPI 3.1 document from the operation table (served at /openapi.json and written to
// spec/openapi.json by `npm run gen:spec`).
// PLACEHOLDER until the operation table lands; replaced in the same issue.
export function buildOpenApiDocument(): Record<string, unknown> {
  return { openapi: '3.1.0', info: { title: 'svc', version: '0.1.0' }, paths: {} };
}

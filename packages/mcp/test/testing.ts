// @svc/mcp/testing: a raw MCP client (Streamable HTTP) for hostile-input tests and benchmarks.
export { passwordToken, RawMcp } from './security/mcp-raw.ts';

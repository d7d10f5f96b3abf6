// @svc/mcp: svc's MCP server, mounted by svc-agent at /mcp (docs/mcp.md).
export { createMcpEndpoint, MCP_METADATA_PATH, MCP_PATH } from './endpoint.ts';
export type { McpEndpoint, McpEndpointOptions } from './endpoint.ts';
export type { SessionLimits } from './session-table.ts';
export { svcdCaller } from './svcd.ts';
export type { SvcdCaller } from './svcd.ts';
export { svcdEvents } from './svcd-events.ts';
export { TOOLS, TOOL_OPERATIONS, OUTPUT_LIMIT } from './tools.ts';

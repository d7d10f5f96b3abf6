// /mcp and its RFC 9728 metadata, served in the agent's process. The MCP endpoint (packages/mcp) is
// loaded on its first request: a front door nobody uses for MCP never pays for the SDK. Its tools
// call svcd's REST API with the caller's own bearer; its waiting output subscriptions hear svcd's
// events over one WSS connection per principal, with that bearer too.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '@svc/protocol';
import { svcdCaller } from '@svc/mcp/svcd';
import type { McpEndpoint } from '@svc/mcp';
import type { AgentOptions } from './agent.ts';

/** Reported by the MCP server as its version. */
const AGENT_VERSION = '0.1.0';

export class McpRoute {
  readonly #options: AgentOptions;
  readonly #svcd: ReturnType<typeof svcdCaller>;
  #endpoint: Promise<McpEndpoint> | undefined;

  constructor(options: AgentOptions) {
    this.#options = options;
    this.#svcd = svcdCaller({ baseUrl: options.daemonUrl, ca: options.tls.ca });
  }

  /** An MCP request; `base` is the agent's public origin. */
  async handle(req: IncomingMessage, res: ServerResponse, base: string): Promise<void> {
    await (await this.#mcpEndpoint()).handle(req, res, base);
  }

  /** RFC 9728 metadata of /mcp: svcd's document for this origin, its resource naming the endpoint. */
  async metadata(req: IncomingMessage, res: ServerResponse, base: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new SvcError('method_not_allowed', 'GET only');
    const answer = await this.#svcd({
      method: 'GET',
      path: '/.well-known/oauth-protected-resource',
      headers: { 'x-forwarded-host': req.headers.host ?? '', 'x-forwarded-proto': 'https' },
    }).catch((error: unknown) => {
      throw new SvcError(
        'upstream_unavailable',
        'the agent cannot reach svcd; retry when the daemon is back',
        {
          cause: error,
        },
      );
    });
    if (answer.status !== 200) throw new SvcError('upstream_unavailable', `svcd answered ${answer.status}`);
    const document = { ...(JSON.parse(answer.body.toString('utf8')) as object), resource: `${base}/mcp` };
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(document));
  }

  /** Closes the endpoint's sessions, if it was ever loaded. */
  async close(): Promise<void> {
    if (this.#endpoint !== undefined) await (await this.#endpoint).close();
  }

  #mcpEndpoint(): Promise<McpEndpoint> {
    const { daemonUrl, tls, log, limits } = this.#options;
    this.#endpoint ??= import('@svc/mcp').then(({ createMcpEndpoint, svcdEvents }) =>
      createMcpEndpoint({
        call: this.#svcd,
        events: svcdEvents({ baseUrl: daemonUrl, ca: tls.ca }),
        version: AGENT_VERSION,
        log: (level, message) => log(level, message, { component: 'mcp' }),
        limits: {
          maxSessions: limits.mcpMaxSessions,
          perPrincipal: limits.mcpMaxSessionsPerPrincipal,
          idleMs: limits.mcpSessionIdleMs,
        },
      }),
    );
    return this.#endpoint;
  }
}

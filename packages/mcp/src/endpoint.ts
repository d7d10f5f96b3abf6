// svc's MCP endpoint (Streamable HTTP, official SDK), mounted by svc-agent at /mcp. Every request
// needs a bearer for svc's API (MCP authorization spec: without one, 401 naming the protected
// resource metadata at /.well-known/oauth-protected-resource/mcp); svcd itself verifies it
// (GET /svc/principal/self), so a token for another audience is refused as it would be by REST.
// A session belongs to the principal that opened it: another principal's request for it is 404.
// Only an active principal whose roles grant a permission some tool needs may open or use one
// (principal-check.ts); sessions are bounded per principal and in all, a full table gives way
// fairly, idle ones expire (session-table.ts); nothing is held for a peer without a token.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { EventFeeds, type EventConnector } from './event-feed.ts';
import {
  appOfUri,
  OUTPUT_URI_TEMPLATE,
  OutputSubscriptions,
  outputUri,
  readLatestOutput,
  ResourceError,
} from './output-resources.ts';
import { refusalOf, selfViewOf, type SelfView } from './principal-check.ts';
import { SessionTable, type SessionLimits } from './session-table.ts';
import type { SvcdCaller } from './svcd.ts';
import { TOOLS } from './tools.ts';

export const MCP_PATH = '/mcp';
export const MCP_METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';
const MAX_BODY_BYTES = 1024 * 1024;
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** How long a verified token is trusted without asking svcd again. */
const VERIFY_CACHE_MS = 10_000;

export interface McpEndpointOptions {
  call: SvcdCaller;
  /** svcd's events (svcd-events.ts); without it, waiting output subscriptions use timers only. */
  events?: EventConnector;
  log: (level: 'info' | 'warn', message: string) => void;
  version: string;
  /** REST.Limits.McpMaxSessions, McpMaxSessionsPerPrincipal, McpSessionIdleMs (svcd's config). */
  limits: SessionLimits;
}

export interface McpEndpoint {
  /** Handles a request to /mcp; `base` is the public origin the client used (`https://host:port`). */
  handle(req: IncomingMessage, res: ServerResponse, base: string): Promise<void>;
  readonly sessions: number;
  /** Open event connections to svcd (one per principal with a waiting output subscription). */
  readonly eventConnections: number;
  close(): Promise<void>;
}

interface Session {
  id: string;
  principal: string;
  token: string;
  lastSeen: number;
  used: number;
  busy: number;
  transport: StreamableHTTPServerTransport;
  server: Server;
  outputs: OutputSubscriptions;
}

class HttpFailure extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

function tokenOf(req: IncomingMessage, base: string): string {
  const challenge = (error?: string): Record<string, string> => ({
    'www-authenticate': `Bearer resource_metadata="${base}${MCP_METADATA_PATH}"${error === undefined ? '' : `, error="${error}"`}`,
  });
  const value = req.headers['authorization'];
  if (value === undefined || value === '')
    throw new HttpFailure(401, 'a bearer token is required', challenge());
  const match = BEARER.exec(value);
  if (match === null)
    throw new HttpFailure(401, 'the Authorization header is not a Bearer token', challenge('invalid_token'));
  return match[1]!;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  const tooLarge = (): HttpFailure =>
    new HttpFailure(413, `request body over ${MAX_BODY_BYTES} bytes`, { connection: 'close' });
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size > MAX_BODY_BYTES) return; // refused already: the rest is discarded, the socket closes after the answer
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        chunks.length = 0;
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpFailure(400, 'the body is not JSON'));
      }
    });
  });
}

function sendJsonRpcError(res: ServerResponse, failure: HttpFailure): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: failure.message }, id: null }));
}

/**
 * The caller as svcd sees it (its principal, roles, permissions, status), asked with its own bearer
 * (GET /svc/principal/self) and trusted for VERIFY_CACHE_MS per token.
 */
function principalVerifier(call: SvcdCaller): {
  selfOf(token: string, base: string): Promise<SelfView>;
  forgetExpired(now: number): void;
} {
  const verified = new Map<string, { self: SelfView; until: number }>();
  async function selfOf(token: string, base: string): Promise<SelfView> {
    const key = createHash('sha256').update(token).digest('base64');
    const cached = verified.get(key);
    if (cached !== undefined && cached.until > Date.now()) return cached.self;
    const answer = await call({ method: 'GET', path: '/svc/principal/self', token }).catch(
      (error: unknown) => {
        throw new HttpFailure(
          503,
          `svcd is not reachable (${error instanceof Error ? error.message : String(error)})`,
        );
      },
    );
    if (answer.status === 401)
      throw new HttpFailure(401, 'the token was refused', {
        'www-authenticate': `Bearer resource_metadata="${base}${MCP_METADATA_PATH}", error="invalid_token"`,
      });
    if (answer.status !== 200)
      throw new HttpFailure(answer.status === 403 ? 403 : 503, `svcd answered ${answer.status}`);
    let self: SelfView | undefined;
    try {
      self = selfViewOf(JSON.parse(answer.body.toString('utf8')));
    } catch {
      self = undefined;
    }
    if (self === undefined) throw new HttpFailure(503, 'svcd answered an unexpected principal record');
    if (verified.size > 10_000) verified.clear();
    verified.set(key, { self, until: Date.now() + VERIFY_CACHE_MS });
    return self;
  }
  return {
    selfOf,
    forgetExpired(now) {
      for (const [key, entry] of verified) if (entry.until < now) verified.delete(key);
    },
  };
}

/** The MCP server of one session: tools, the output resources, subscriptions. */
function newServer(options: McpEndpointOptions, session: () => Session): Server {
  const server = new Server(
    { name: 'svc', version: options.version },
    {
      capabilities: { tools: {}, resources: { subscribe: true } },
      instructions:
        "svc runs and supervises applications on this host. Tools act with the signed-in person's rights; output is returned in windows with the byte position to continue from.",
    },
  );
  const context = (signal: AbortSignal) => ({ call: options.call, token: session().token, signal });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = TOOLS.find((t) => t.name === request.params.name);
    if (tool === undefined)
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name.slice(0, 100)}`);
    const input = request.params.arguments ?? {};
    return tool.call(input, context(extra.signal));
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: OUTPUT_URI_TEMPLATE,
        name: 'Application output',
        description: 'The latest output of an application; subscribe to be told when there is more.',
        mimeType: 'text/plain',
      },
    ],
  }));
  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
    const answer = await options.call({
      method: 'GET',
      path: '/svc/applications',
      token: session().token,
      signal: extra.signal,
    });
    if (answer.status !== 200) throw new McpError(ErrorCode.InternalError, `svcd answered ${answer.status}`);
    const apps = JSON.parse(answer.body.toString('utf8')) as { name: string }[];
    return {
      resources: apps.map((app) => ({
        uri: outputUri(app.name),
        name: `${app.name} output`,
        mimeType: 'text/plain',
      })),
    };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const app = appOfUri(request.params.uri);
    if (app === undefined) throw new McpError(ErrorCode.InvalidParams, 'unknown resource');
    try {
      const latest = await readLatestOutput(options.call, session().token, app);
      return {
        contents: [{ uri: request.params.uri, mimeType: 'text/plain', text: latest.text }],
        _meta: { stdout_position_from: latest.from, stdout_position_to: latest.to },
      };
    } catch (error) {
      throw new McpError(ErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
    }
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    try {
      await session().outputs.subscribe(request.params.uri);
    } catch (error) {
      if (error instanceof ResourceError) throw new McpError(ErrorCode.InvalidParams, error.message);
      throw error;
    }
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    session().outputs.unsubscribe(request.params.uri);
    return {};
  });
  return server;
}

export function createMcpEndpoint(options: McpEndpointOptions): McpEndpoint {
  const { limits } = options;
  const sessions = new SessionTable<Session>(limits);
  const verifier = principalVerifier(options.call);
  const feeds = new EventFeeds(options.events);
  /** Session uses so far: their order decides which session is the least recently used. */
  let uses = 0;

  // Expiry is checked at a quarter of the idle time (at most every minute): a session goes at most
  // 1.25 × idleMs after its last request.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const session of sessions.expired(now)) void closeSession(session, 'idle');
      verifier.forgetExpired(now);
    },
    Math.min(60_000, Math.max(250, Math.floor(limits.idleMs / 4))),
  );
  sweep.unref();

  async function closeSession(session: Session, why: string): Promise<void> {
    if (!sessions.remove(session)) return;
    options.log('info', `MCP session of ${session.principal} closed (${why})`);
    session.outputs.close();
    await session.transport.close().catch(() => undefined);
  }

  /** Admits a session for `principal` (closing the one the table gives up) and connects it. */
  async function openSession(principal: string, token: string, res: ServerResponse): Promise<Session> {
    const admission = sessions.admit(principal);
    if (!admission.admit) throw new HttpFailure(admission.status, admission.message);
    if (admission.evict !== undefined)
      void closeSession(
        admission.evict,
        admission.evict.principal === principal
          ? `${principal} opened a new one at its cap of ${limits.perPrincipal}`
          : `the table was full (${limits.maxSessions}) and ${admission.evict.principal} held the most`,
      );
    // The slot is taken before anything is awaited: concurrent initializes are counted.
    const id = randomUUID();
    const session = { id, principal, token, lastSeen: Date.now(), used: 0, busy: 0 } as Session;
    sessions.add(session);
    track(session, res);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id });
    const server = newServer(options, () => session);
    session.transport = transport;
    session.server = server;
    session.outputs = new OutputSubscriptions({
      call: options.call,
      token: () => session.token,
      watch: (app) => feeds.watch(session.principal, session.token, app),
      updated: (uri) => server.sendResourceUpdated({ uri }),
      log: (message) => options.log('info', message),
    });
    transport.onclose = () => {
      sessions.remove(session);
      session.outputs.close();
    };
    await server.connect(transport);
    return session;
  }

  /** Counts the request in flight until its response closes (an event stream stays open). */
  function track(session: Session, res: ServerResponse): void {
    session.busy += 1;
    session.lastSeen = Date.now();
    session.used = ++uses;
    res.once('close', () => {
      session.busy -= 1;
      session.lastSeen = Date.now();
    });
  }

  /** Closes every session of a principal svcd no longer lets hold one. */
  function refuse(self: SelfView, reason: string): never {
    for (const session of sessions.ofPrincipal(self.principal_id)) void closeSession(session, reason);
    throw new HttpFailure(403, reason);
  }

  return {
    get sessions() {
      return sessions.size;
    },
    async handle(req, res, base) {
      try {
        if (!['GET', 'POST', 'DELETE'].includes(req.method ?? ''))
          throw new HttpFailure(405, `${req.method ?? ''} is not allowed on ${MCP_PATH}`, {
            allow: 'GET, POST, DELETE',
          });
        const token = tokenOf(req, base);
        const self = await verifier.selfOf(token, base);
        const refusal = refusalOf(self);
        if (refusal !== undefined) refuse(self, refusal);
        const principal = self.principal_id;
        const id = req.headers['mcp-session-id'];
        const body = req.method === 'POST' ? await readBody(req) : undefined;
        const auth = { token, clientId: 'svc-mcp-user', scopes: [], extra: { principal } };
        if (typeof id === 'string') {
          const session = sessions.get(id);
          // Another principal's session is as good as absent (no hint that it exists).
          if (session === undefined || session.principal !== principal)
            throw new HttpFailure(404, 'Session not found');
          session.token = token;
          track(session, res);
          await session.transport.handleRequest(Object.assign(req, { auth }), res, body);
          return;
        }
        if (req.method !== 'POST' || !isInitializeRequest(body))
          throw new HttpFailure(
            400,
            'Bad Request: no valid session ID provided (send an initialize request first)',
          );
        const session = await openSession(principal, token, res);
        await session.transport.handleRequest(Object.assign(req, { auth }), res, body);
        // An initialize the transport did not accept leaves no session behind.
        if (session.transport.sessionId === undefined) void closeSession(session, 'initialize failed');
      } catch (error) {
        if (error instanceof HttpFailure) sendJsonRpcError(res, error);
        else {
          options.log(
            'warn',
            `MCP request failed: ${error instanceof Error ? error.message : String(error)}`,
          );
          sendJsonRpcError(res, new HttpFailure(500, 'internal error'));
        }
      }
    },
    get eventConnections() {
      return feeds.size;
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((session) => closeSession(session, 'shutdown')));
      await feeds.close();
    },
  };
}

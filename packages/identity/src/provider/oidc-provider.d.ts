// Minimal local type declarations of the parts of `oidc-provider` 9 (a JavaScript package without
// bundled types; no @types package for v9) that svc-identity uses. Shapes follow the library's
// documentation (docs/README.md of oidc-provider 9); anything not used here is left out.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface OidcParams {
    [name: string]: unknown;
  }

  export interface ClientLike {
    readonly clientId: string;
    readonly clientAuthMethod: string;
    grantTypeAllowed(type: string): boolean;
  }

  export interface AccountLike {
    accountId: string;
    claims(use: string, scope: string): Promise<Record<string, unknown>> | Record<string, unknown>;
  }

  export interface OidcContext {
    params?: OidcParams;
    client?: ClientLike;
    route?: string;
    entities: Record<string, unknown>;
  }

  /** The Koa context the library hands to helpers and grant handlers. */
  export interface KoaContextWithOIDC {
    oidc: OidcContext;
    body: unknown;
    method: string;
    path: string;
    status: number;
    req: IncomingMessage;
    set(field: string, value: string): void;
  }

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'opaque' | 'jwt';
    jwt?: { sign?: { alg: string } };
  }

  export interface GrantInstance {
    readonly jti: string | undefined;
    accountId: string | undefined;
    clientId: string | undefined;
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    getOIDCScope(): string;
    save(): Promise<string>;
  }

  export interface TokenInstance {
    readonly jti: string;
    scope: string | undefined;
    resourceServer: unknown;
    readonly expiration: number;
    readonly tokenType?: string;
    save(): Promise<string>;
  }

  export interface TokenConstructor {
    new (properties: Record<string, unknown>): TokenInstance;
  }

  export interface GrantConstructor {
    new (properties: { accountId?: string; clientId?: string }): GrantInstance;
    find(id: string): Promise<GrantInstance | undefined>;
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId?: string };
    grantId?: string;
  }

  export type GrantHandler = (ctx: KoaContextWithOIDC) => Promise<void>;

  export interface AdapterPayload {
    [key: string]: unknown;
    grantId?: string;
    userCode?: string;
    uid?: string;
    consumed?: unknown;
  }

  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export type Configuration = Record<string, unknown>;

  export class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    proxy: boolean;
    readonly Grant: GrantConstructor;
    readonly AccessToken: TokenConstructor;
    readonly RefreshToken: TokenConstructor;
    readonly ResourceServer: new (identifier: string, info: ResourceServerInfo) => unknown;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    registerGrantType(
      name: string,
      handler: GrantHandler,
      params?: string[] | Set<string>,
      dupes?: string[] | Set<string>,
    ): void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export class OIDCProviderError extends Error {
    constructor(status: number, message: string);
    status: number;
    statusCode: number;
    error: string;
    error_description?: string;
  }

  export const errors: {
    InvalidRequest: new (description?: string) => OIDCProviderError;
    InvalidGrant: new (description?: string) => OIDCProviderError;
    OIDCProviderError: typeof OIDCProviderError;
  };

  export default Provider;
}

declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  import type { GrantHandler, Provider } from 'oidc-provider';
  /** The library's per-instance internal state (used only to wrap the built-in refresh handler). */
  export default function instance(provider: Provider): { grantTypeHandlers: Map<string, GrantHandler> };
}

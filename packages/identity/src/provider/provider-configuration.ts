// The configuration of oidc-provider 9 for svc-identity (provider.ts): clients, keys, lifetimes,
// scopes and claims, the features the spec turns on, and the library's pages replaced by our own.
import type { ClientLike, Configuration, KoaContextWithOIDC, ResourceServerInfo } from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { IdentityStore } from '../store/identity-store.ts';
import type { MemoryStore } from './adapter.ts';
import {
  ACCESS_TOKEN_TTL,
  API_AUDIENCE,
  API_RESOURCE,
  AUDIENCE_SCOPE,
  OIDC_SCOPES,
  isApiResource,
} from './clients.ts';
import { escapeHtml, page } from './interaction.ts';
import { SIGNING_ALG, type SigningKeyRing } from './keys.ts';
import { clientOriginAllowed } from './loopback-redirect.ts';

export const REFRESH_TOKEN_IDLE_SECONDS = 168 * 3600;

/** The svc API as a resource server: JWT access tokens for the `svc-api` audience. */
export function resourceServerInfo(): ResourceServerInfo {
  return {
    scope: AUDIENCE_SCOPE,
    audience: API_AUDIENCE,
    accessTokenTTL: ACCESS_TOKEN_TTL,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: SIGNING_ALG } },
  };
}

export interface ProviderConfigurationInputs {
  readonly models: MemoryStore;
  /** Client metadata (clients.ts `clientMetadata`). */
  readonly clients: Record<string, unknown>[];
  readonly keys: SigningKeyRing;
  readonly store: IdentityStore;
  readonly cookieKeys: string[];
  /** Requests whose refresh token is not rotated (answered within the reuse window). */
  readonly noRotation: WeakSet<object>;
  /** `<issuer path>/interaction`. */
  readonly interactionBase: string;
}

export function providerConfiguration(inputs: ProviderConfigurationInputs): Configuration {
  const { models, clients, keys, store, cookieKeys, noRotation, interactionBase } = inputs;
  const findAccount = async (_ctx: unknown, id: string) => {
    const user = store.findById(id);
    if (user === undefined) return undefined;
    return {
      accountId: user.user_id,
      claims: () => ({ sub: user.user_id, email: user.email, preferred_username: user.username }),
    };
  };
  return {
    adapter: models.adapterFor,
    clients,
    jwks: keys.providerJwks(),
    findAccount,
    cookies: { keys: cookieKeys },
    scopes: [...OIDC_SCOPES],
    claims: { openid: ['sub'], email: ['email'], profile: ['preferred_username'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    clientBasedCORS: (ctx: KoaContextWithOIDC, origin: string, client: ClientLike) =>
      clientOriginAllowed(origin, client, ctx.oidc.route),
    rotateRefreshToken: (ctx: object) => !noRotation.has(ctx),
    issueRefreshToken: async (_ctx: unknown, client: ClientLike) => client.grantTypeAllowed('refresh_token'),
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => {
      if (token.accountId === undefined) return undefined;
      const user = store.findById(token.accountId);
      return user === undefined ? undefined : { email: user.email, preferred_username: user.username };
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      ClientCredentials: ACCESS_TOKEN_TTL,
      IdToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: 60,
      DeviceCode: 600,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      // Rotation issues a new refresh token on every use, each valid 168 h: an idle expiry.
      RefreshToken: REFRESH_TOKEN_IDLE_SECONDS,
      // Outlives any chain of refresh tokens in practice; a grant older than this must sign in again.
      Grant: 365 * 24 * 3600,
    },
    features: providerFeatures(),
    interactions: {
      url: (_ctx: unknown, interaction: { uid: string }) => `${interactionBase}/${interaction.uid}`,
    },
    renderError: async (ctx: KoaContextWithOIDC, out: Record<string, string>) => {
      ctx.status = ctx.status >= 400 ? ctx.status : 400;
      ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Error</title></head><body><h1>Sign-in error</h1><p>${escapeHtml(out['error'] ?? 'error')}: ${escapeHtml(out['error_description'] ?? '')}</p></body></html>`;
    },
  };
}

function providerFeatures(): Record<string, unknown> {
  return {
    devInteractions: { enabled: false },
    // Own minimal pages: the library's defaults load web fonts from a third-party origin.
    deviceFlow: {
      enabled: true,
      userCodeInputSource: async (ctx: KoaContextWithOIDC, form: string, _out: unknown, error?: unknown) => {
        const message =
          error === undefined
            ? 'Enter the code displayed on your device.'
            : 'The code is not valid or has expired. Try again.';
        ctx.body = page(
          'Connect a device',
          `<p${error === undefined ? '' : ' class="error" role="alert"'}>${message}</p>${form}
<label>Code<input name="user_code" form="op.deviceInputForm" autocomplete="off" autofocus required></label>
<button type="submit" form="op.deviceInputForm">Continue</button>`,
        );
      },
      userCodeConfirmSource: async (
        ctx: KoaContextWithOIDC,
        form: string,
        client: { clientId: string },
        _device: unknown,
        userCode: string,
      ) => {
        ctx.body = page(
          'Confirm the device',
          `<p>Application <b>${escapeHtml(client.clientId)}</b> on a device showing the code <code>${escapeHtml(userCode)}</code> asks to sign in. Continue only if the code matches.</p>${form}
<button type="submit" form="op.deviceConfirmForm" autofocus>Continue</button>
<button type="submit" form="op.deviceConfirmForm" name="abort" value="yes">Abort</button>`,
        );
      },
      successSource: async (ctx: KoaContextWithOIDC) => {
        ctx.body = page('Device connected', '<p>Sign-in complete. You can return to your device.</p>');
      },
    },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx: KoaContextWithOIDC, form: string) => {
        // The library's form posts to the issuer's own (loopback) origin, which a browser
        // reached through the agent cannot open: post to the same path on the page's origin.
        const sameOrigin = form.replace(/action="https?:\/\/[^/"]+\//, 'action="/');
        ctx.body = page(
          'Sign out',
          `<p>Sign out of svc?</p>${sameOrigin}
<button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out</button>
<button type="submit" form="op.logoutForm">Stay signed in</button>`,
        );
      },
      postLogoutSuccessSource: async (ctx: KoaContextWithOIDC) => {
        ctx.body = page('Signed out', '<p>You are signed out.</p>');
      },
    },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx: KoaContextWithOIDC, _client: unknown, oneOf?: string[]) => {
        if (oneOf !== undefined) return oneOf.includes(API_RESOURCE) ? API_RESOURCE : oneOf;
        const scope = ctx.oidc.params?.['scope'];
        return typeof scope === 'string' && scope.split(' ').includes(AUDIENCE_SCOPE)
          ? API_RESOURCE
          : undefined;
      },
      getResourceServerInfo: async (_ctx: unknown, resource: string) => {
        if (!isApiResource(resource)) throw new errors.InvalidRequest('unknown resource indicator');
        return resourceServerInfo();
      },
      useGrantedResource: async () => true,
    },
  };
}

// The grants svc-identity adds to or changes in oidc-provider (provider.ts): the password grant
// (builtin mode, when the flow is on) and the refresh-token reuse window.
import type { ClientLike, GrantHandler, KoaContextWithOIDC, OIDCProviderError } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import internals from 'oidc-provider/lib/helpers/weak_cache.js';
import { API_RESOURCE, AUDIENCE_SCOPE, OIDC_SCOPES, PASSWORD_GRANT, isApiResource } from './clients.ts';
import { resourceServerInfo } from './provider-configuration.ts';
import type { RefreshReuse } from './refresh-reuse.ts';
import { clientAddress, type PasswordSignIn, type SignInResult } from './sign-in.ts';
import type { Telemetry } from './telemetry.ts';

/** `invalid_grant` with this status and description (the library's constructor takes a detail only). */
function grantError(status: number, description: string): OIDCProviderError {
  const error = new errors.InvalidGrant(description);
  error.error_description = description;
  error.status = status;
  error.statusCode = status;
  return error;
}

function failedSignIn(
  result: Exclude<SignInResult, { ok: true }>,
  ctx: KoaContextWithOIDC,
): OIDCProviderError {
  if (result.reason === 'locked') {
    // Too many failed sign-ins for this user from this address, or from this address: 429 until the wait ends.
    const seconds = Math.ceil(result.retryAfterMs / 1000);
    ctx.set('retry-after', String(seconds));
    return grantError(429, `too many failed sign-ins: try again in ${seconds} s`);
  }
  // Spec ("Password rules" 5, "Errors"): a wrong password — including a leftover hash — is 401.
  return grantError(401, 'invalid username or password');
}

/**
 * The password grant (builtin mode only; absent, hence `unsupported_grant_type`, when turned off):
 * username and password checked through `signIn` (its throttle included); a user with MFA is
 * refused, since no second factor travels in this grant.
 */
export function registerPasswordGrant(
  provider: Provider,
  signIn: PasswordSignIn,
  telemetry: Telemetry,
): void {
  provider.registerGrantType(
    PASSWORD_GRANT,
    async (ctx) => {
      const params = ctx.oidc.params ?? {};
      const client = ctx.oidc.client as ClientLike;
      const username = params['username'];
      const password = params['password'];
      if (typeof username !== 'string' || typeof password !== 'string')
        throw new errors.InvalidRequest('username and password are required');
      const result = await signIn.verify(username, password, clientAddress(ctx.req));
      if (!result.ok) {
        telemetry.count(result.reason === 'locked' ? 'logins_locked' : 'logins_failed');
        throw failedSignIn(result, ctx);
      }
      const user = result.user;
      if (signIn.mfaRequired(user)) {
        // No second factor travels in this grant: only the browser and device flows ask for it.
        telemetry.count('logins_mfa_required');
        throw grantError(
          400,
          'multi-factor authentication is required for this user: sign in with the browser or device flow',
        );
      }
      signIn.succeeded(result.userKey, clientAddress(ctx.req));
      telemetry.count('logins_succeeded');
      const scopeParam = typeof params['scope'] === 'string' ? params['scope'] : 'openid';
      const requested = new Set(scopeParam.split(' ').filter(Boolean));
      const resource = params['resource'];
      if (resource !== undefined && (typeof resource !== 'string' || !isApiResource(resource)))
        throw new errors.InvalidRequest('unknown resource indicator');
      const forApi = requested.has(AUDIENCE_SCOPE) || resource !== undefined;
      const oidcScope = [...requested]
        .filter((s) => (OIDC_SCOPES as readonly string[]).includes(s))
        .join(' ');

      const grant = new provider.Grant({ accountId: user.user_id, clientId: client.clientId });
      if (oidcScope !== '') grant.addOIDCScope(oidcScope);
      if (forApi) grant.addResourceScope(API_RESOURCE, AUDIENCE_SCOPE);
      const grantId = await grant.save();

      const at = new provider.AccessToken({
        accountId: user.user_id,
        client,
        grantId,
        gty: PASSWORD_GRANT,
        scope: forApi ? AUDIENCE_SCOPE : oidcScope,
      });
      if (forApi) at.resourceServer = new provider.ResourceServer(API_RESOURCE, resourceServerInfo());
      const accessToken = await at.save();
      const body: Record<string, unknown> = {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: at.expiration,
        scope: at.scope,
      };
      if (requested.has('offline_access') && client.grantTypeAllowed('refresh_token')) {
        const rt = new provider.RefreshToken({
          accountId: user.user_id,
          client,
          grantId,
          gty: PASSWORD_GRANT,
          scope: [...requested].join(' '),
          iiat: Math.floor(Date.now() / 1000),
          rotations: 0,
          ...(forApi ? { resource: API_RESOURCE } : {}),
        });
        body['refresh_token'] = await rt.save();
      }
      ctx.body = body;
    },
    ['username', 'password', 'scope', 'resource'],
    ['resource'],
  );
}

/**
 * Refresh: rotation on every use, plus a reuse window (Dex's `reuseInterval`): a rotated token
 * presented again within 5 minutes of its rotation answers with the *current* refresh token and
 * a fresh access token instead of revoking the grant; later reuse revokes it (library default).
 */
export function addRefreshReuse(
  provider: Provider,
  reuse: RefreshReuse,
  noRotation: WeakSet<object>,
  telemetry: Telemetry,
): void {
  const handlers = internals(provider).grantTypeHandlers;
  const refresh = handlers.get('refresh_token') as GrantHandler;
  handlers.set('refresh_token', async (ctx) => {
    const params = ctx.oidc.params ?? {};
    const presented = params['refresh_token'];
    if (typeof presented === 'string') {
      const current = reuse.current(presented);
      if (current !== undefined) {
        params['refresh_token'] = current;
        noRotation.add(ctx);
        telemetry.count('refresh_reuse_answered');
      }
    }
    await refresh(ctx);
    const rotated = ctx.oidc.entities['RotatedRefreshToken'] as { jti?: string } | undefined;
    const issued = (ctx.body as { refresh_token?: unknown } | undefined)?.refresh_token;
    if (rotated?.jti !== undefined && typeof issued === 'string') reuse.record(rotated.jti, issued);
  });
}

// Who a caller is: the policy store (principals and roles, work/auth/policy.yaml), the OIDC token
// verifier and the execution user of each principal. One bearer check serves the WSS upgrade and
// the dispatcher.
import { join } from 'node:path';
import { SvcError } from '@svc/protocol';
import type { Authenticator } from '../api/dispatcher.ts';
import { wwwAuthenticate } from '../auth/authorizer.ts';
import { publicBaseUrl } from '../auth/discovery-docs.ts';
import { effectiveExecutionUser, type ExecUserSettings } from '../auth/execution-user.ts';
import { PolicyStore } from '../auth/policy-store.ts';
import type { Principal } from '../auth/principal.ts';
import { createOidcTokenVerifier, type OidcTokenVerifier } from '../auth/token-verifier.ts';
import type { DaemonConfig, ListenerName } from '@svc/platform/config';

/** Seed of the authorization policy in builtin mode (CONTRACT §8). */
export const BUILTIN_SEED: Record<string, string[]> = {
  admin: ['svc-admin'],
  guest: ['svc-viewer'],
  'client:svc-automation': ['svc-maintenance'],
};

export interface CallerAccess {
  readonly policy: PolicyStore;
  /** The execution user of a principal (BaseConfig.DefaultExecUser / DisableExecUser applied). */
  readonly executionUserOf: (principalId: string | undefined) => string | undefined;
  /** The bearer check: a verified token's principal, with its effective execution user. */
  readonly authenticator: Omit<Authenticator, 'challenge'>;
  /** The dispatcher's authenticator: its 401 challenges name the metadata URL under `restBaseUrl`. */
  readonly withChallenge: (restBaseUrl: string) => Authenticator;
  /**
   * svc-identity reported its ports (work/ports.identity.json): in builtin mode with
   * SVC_ISSUER_PORT=0 the issuer's URL is known only then; until then tokens fail as
   * issuer-unavailable.
   */
  readonly identityPorts: (ports: Partial<Record<ListenerName, number>>) => void;
}

export async function openCallerAccess(
  config: DaemonConfig,
  metrics: { tokenRejected(code: string): void },
): Promise<CallerAccess> {
  const policy = await PolicyStore.open(join(config.workDir, 'auth', 'policy.yaml'), {
    seed: config.authMode === 'builtin' ? BUILTIN_SEED : {},
  });
  const newVerifier = (): OidcTokenVerifier =>
    createOidcTokenVerifier({ issuer: config.oidcIssuer, audience: config.oidcAudience });
  let verifier = newVerifier();
  const issuerFromPorts = config.authMode === 'builtin' && new URL(config.oidcIssuer).port === '0';

  // The one accessor of BaseConfig.DefaultExecUser / DisableExecUser.
  const execUserSettings = (): ExecUserSettings => ({
    defaultExecUser: config.defaultExecUser,
    disableExecUser: config.disableExecUser,
  });
  // The principal with its effective execution user, the same object while neither the policy's
  // principal nor the execution-user settings change (no allocation per request of one token).
  const withExecUser = new WeakMap<Principal, { settings: ExecUserSettings; principal: Principal }>();
  const effectivePrincipal = (principal: Principal): Principal => {
    const settings = execUserSettings();
    const memo = withExecUser.get(principal);
    if (
      memo !== undefined &&
      memo.settings.defaultExecUser === settings.defaultExecUser &&
      memo.settings.disableExecUser === settings.disableExecUser
    )
      return memo.principal;
    const effective = {
      ...principal,
      executionUser: effectiveExecutionUser(principal.executionUser, settings),
    };
    withExecUser.set(principal, { settings, principal: effective });
    return effective;
  };
  const authenticator: CallerAccess['authenticator'] = {
    async authenticate(token) {
      const verified = await verifier.verify(token).catch((error: unknown) => {
        metrics.tokenRejected(error instanceof SvcError ? error.code : 'internal');
        throw error;
      });
      return effectivePrincipal(await policy.resolve(verified.principalId, verified.expiresAt));
    },
    authenticateCached(token) {
      const verified = verifier.verifyCached(token);
      const principal =
        verified === undefined ? undefined : policy.resolveKnown(verified.principalId, verified.expiresAt);
      return principal === undefined ? undefined : effectivePrincipal(principal);
    },
  };
  return {
    policy,
    executionUserOf: (principalId) =>
      principalId === undefined
        ? undefined
        : effectiveExecutionUser(policy.getPrincipal(principalId)?.execution_user, execUserSettings()),
    authenticator,
    withChallenge: (restBaseUrl) => ({
      ...authenticator,
      // Through svc-agent the metadata URL names the agent's address (the one the client can reach).
      challenge: (description, headers) =>
        wwwAuthenticate(
          description === undefined ? undefined : 'invalid_token',
          `${publicBaseUrl(headers, restBaseUrl)}/.well-known/oauth-protected-resource`,
          description,
        ),
    }),
    identityPorts: (ports) => {
      if (!issuerFromPorts || ports.issuer === undefined) return;
      config.oidcIssuer = `http://127.0.0.1:${ports.issuer}/auth`;
      verifier = newVerifier();
    },
  };
}

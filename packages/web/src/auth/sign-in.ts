// The signed-in session of the page: tokens live only in this module's closure (never in storage,
// cookies or the URL), renewed with the rotating refresh token before they expire. A reload loses
// them: the page then asks the provider once with prompt=none, which answers at once while the
// provider's own session cookie (httpOnly, on /auth) is alive. Only the PKCE verifier and the state
// of a sign-in in flight sit in sessionStorage, for the one redirect, and are deleted on return.
import { signal } from '@preact/signals';
import {
  AuthError,
  CLIENT_ID,
  authorizationAnswer,
  authorizationUrl,
  codeChallenge,
  discover,
  endSessionUrl,
  exchangeCode,
  randomToken,
  refreshTokens,
  renewalDelay,
  revoke,
  type ProviderMetadata,
  type TokenSet,
} from './oidc.ts';

const PENDING_KEY = 'svc-web.sign-in';
const SILENT_KEY = 'svc-web.silent-tried';

export type AuthState =
  | { status: 'starting' }
  | { status: 'signed-out'; reason?: string }
  | { status: 'signed-in' }
  /** Tokens forgotten; the page is leaving for the provider's end-session page. */
  | { status: 'signing-out' }
  | { status: 'expired'; reason: string };

export const authState = signal<AuthState>({ status: 'starting' });

interface Pending {
  state: string;
  verifier: string;
  /** The route (hash) to return to. */
  hash: string;
  silent: boolean;
  /** The provider metadata used (not secret): the return needs no second discovery. */
  provider?: ProviderMetadata;
  clientId?: string;
}

let provider: ProviderMetadata | undefined;
let clientId = CLIENT_ID;
let tokens: TokenSet | undefined;
let renewTimer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<(token: string | undefined) => void>();

/** The redirect URI: the agent's root, as registered for svc-web (config/oidc.yaml). */
export function redirectUri(): string {
  return `${window.location.origin}/`;
}

/** Calls `listener` with each new access token (and undefined on sign-out); returns an unsubscribe. */
export function onToken(listener: (token: string | undefined) => void): () => void {
  listeners.add(listener);
  if (tokens !== undefined) listener(tokens.accessToken);
  return () => listeners.delete(listener);
}

function publish(next: TokenSet | undefined): void {
  tokens = next;
  for (const listener of listeners) listener(next?.accessToken);
}

async function ensureProvider(): Promise<ProviderMetadata> {
  if (provider !== undefined) return provider;
  const found = await discover(window.location.origin);
  provider = found.provider;
  clientId = found.config.clients?.web ?? CLIENT_ID;
  return provider;
}

/** Leaves the page for the provider's authorization endpoint. */
export async function signIn(options: { silent?: boolean } = {}): Promise<void> {
  const metadata = await ensureProvider();
  const pending: Pending = {
    state: randomToken(),
    verifier: randomToken(48),
    hash: window.location.hash,
    silent: options.silent === true,
    provider: metadata,
    clientId,
  };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  window.location.assign(
    authorizationUrl(metadata, {
      clientId,
      redirectUri: redirectUri(),
      state: pending.state,
      challenge: await codeChallenge(pending.verifier),
      ...(options.silent === true ? { prompt: 'none' } : {}),
    }),
  );
}

function takePending(): Pending | undefined {
  const text = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (text === null) return undefined;
  try {
    return JSON.parse(text) as Pending;
  } catch {
    return undefined;
  }
}

function scheduleRenewal(issuedAt: number): void {
  clearTimeout(renewTimer);
  if (tokens === undefined) return;
  renewTimer = setTimeout(() => void renew(), renewalDelay(tokens, issuedAt, Date.now()));
}

/** Renews now with the refresh token; on failure the session is marked expired (sign in again). */
export async function renew(): Promise<void> {
  if (tokens === undefined || provider === undefined) return;
  try {
    const issuedAt = Date.now();
    publish(await refreshTokens(provider, clientId, tokens, Date.now));
    scheduleRenewal(issuedAt);
  } catch (error) {
    // A network failure is retried shortly while the access token is still valid.
    if (!(error instanceof AuthError) && tokens.expiresAt - Date.now() > 15_000) {
      renewTimer = setTimeout(() => void renew(), 10_000);
      return;
    }
    publish(undefined);
    authState.value = { status: 'expired', reason: (error as Error).message };
  }
}

/**
 * Runs once at page load: completes a sign-in returning to the page (`?code=&state=`), or tries a
 * silent one (prompt=none) once per tab, or settles on signed-out.
 */
export async function startSession(): Promise<void> {
  const params = authorizationAnswer(window.location.search, window.location.hash);
  if (params !== undefined) {
    const code = params.get('code');
    const error = params.get('error');
    const pending = takePending();
    window.history.replaceState(null, '', `/${pending?.hash ?? ''}`);
    if (pending === undefined || params.get('state') !== pending.state) {
      authState.value = { status: 'signed-out', reason: 'The sign-in answer did not match a sign-in started here.' };
      return;
    }
    if (error !== null || code === null) {
      authState.value = pending.silent
        ? { status: 'signed-out' }
        : { status: 'signed-out', reason: params.get('error_description') ?? error ?? 'sign-in failed' };
      return;
    }
    if (pending.provider !== undefined && pending.clientId !== undefined) {
      provider = pending.provider;
      clientId = pending.clientId;
    }
    try {
      const metadata = await ensureProvider();
      const issuedAt = Date.now();
      publish(await exchangeCode(metadata, { clientId, redirectUri: redirectUri(), code, verifier: pending.verifier }, Date.now));
      scheduleRenewal(issuedAt);
      sessionStorage.removeItem(SILENT_KEY);
      authState.value = { status: 'signed-in' };
    } catch (cause) {
      authState.value = { status: 'signed-out', reason: (cause as Error).message };
    }
    return;
  }
  if (sessionStorage.getItem(SILENT_KEY) === null) {
    sessionStorage.setItem(SILENT_KEY, '1');
    try {
      await signIn({ silent: true });
      return;
    } catch (cause) {
      authState.value = { status: 'signed-out', reason: (cause as Error).message };
      return;
    }
  }
  sessionStorage.removeItem(SILENT_KEY);
  authState.value = { status: 'signed-out' };
}

/** Revokes the refresh token, forgets the tokens, and ends the provider session (it asks to confirm). */
export async function signOut(): Promise<void> {
  clearTimeout(renewTimer);
  const metadata = provider;
  const refresh = tokens?.refreshToken;
  publish(undefined);
  if (metadata === undefined) {
    authState.value = { status: 'signed-out' };
    return;
  }
  authState.value = { status: 'signing-out' };
  if (refresh !== undefined) await revoke(metadata, clientId, refresh);
  // The next load must not sign in silently again before the provider session is gone.
  sessionStorage.setItem(SILENT_KEY, '1');
  const url = endSessionUrl(metadata, { clientId, postLogoutRedirectUri: redirectUri() });
  if (url !== undefined) window.location.assign(url);
  else authState.value = { status: 'signed-out' };
}

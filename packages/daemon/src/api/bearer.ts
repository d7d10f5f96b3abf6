// The bearer check of RFC 6750 for the dispatcher (also on behalf of the forwarding gateway): parse the
// Authorization header, verify the token, and build every 401 with its WWW-Authenticate challenge
// (RFC 6750, RFC 9728) in one place.
import { SvcError } from '@svc/protocol';
import type { Principal } from '../auth/principal.ts';
import type { Authenticator } from './dispatcher.ts';

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** A 401: `unauthorized` for a missing bearer (no description), `invalid_token` for a bad one. */
export function unauthorizedError(
  auth: Authenticator,
  headers: Readonly<Record<string, string>>,
  code: 'unauthorized' | 'invalid_token',
  message: string,
  cause?: unknown,
): SvcError {
  return new SvcError(code, message, {
    cause,
    headers: { 'www-authenticate': auth.challenge(code === 'unauthorized' ? undefined : message, headers) },
  });
}

/** The principal of the request's bearer. Throws SvcError: 401 with a challenge, or 503. */
export async function authenticateBearer(
  auth: Authenticator,
  headers: Readonly<Record<string, string>>,
): Promise<Principal> {
  const header = headers['authorization'];
  if (header === undefined || header === '')
    throw unauthorizedError(auth, headers, 'unauthorized', 'a bearer token is required');
  const match = BEARER.exec(header);
  if (match === null)
    throw unauthorizedError(auth, headers, 'invalid_token', 'the Authorization header is not a Bearer token');
  try {
    return await auth.authenticate(match[1]!);
  } catch (cause) {
    if (cause instanceof SvcError && cause.code === 'invalid_token')
      throw unauthorizedError(auth, headers, 'invalid_token', cause.message, cause);
    throw cause;
  }
}

/**
 * The principal of the request's bearer when the authenticator knows the token already (no await,
 * no allocation); undefined in every other case, which `authenticateBearer` then decides.
 */
export function cachedBearerPrincipal(
  auth: Authenticator,
  headers: Readonly<Record<string, string>>,
): Principal | undefined {
  const header = headers['authorization'];
  if (header === undefined || auth.authenticateCached === undefined) return undefined;
  const match = BEARER.exec(header);
  return match === null ? undefined : auth.authenticateCached(match[1]!);
}

// The page's svcd clients, both same-origin through the agent (no CORS): `api` sends REST calls over
// fetch; `connection.ts` keeps the WSS one for event subscriptions. Both get each new access token
// from sign-in.ts; nothing else holds it.
import { FetchTransport, SvcClient } from '@svc/client/browser';
import { onToken } from './auth/sign-in.ts';

export const api = new SvcClient({ transport: new FetchTransport({ baseUrl: window.location.origin }) });

onToken((token) => (token === undefined ? api.clearToken() : api.setToken(token)));

/** The message of an error to show a person (ApiError carries the daemon's message). */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

// The JSON API of the administration UI (server.ts), for the helper script (add-user /
// delete-user). A POST needs Content-Type application/json, which a cross-origin page cannot send
// without a CORS preflight (never answered).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminClient } from '../grpc-client.ts';
import { HttpError, json, readBody, sameOrigin } from './http.ts';

/** The JSON view of a user for the helper script: principal id = user_id (CONTRACT §8). */
const userJson = (user: { user_id: string; email: string; username: string }) => ({
  user_id: user.user_id,
  email: user.email,
  username: user.username,
  principal_id: user.user_id,
});

function decodeEmail(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'invalid_argument', 'malformed percent-encoding');
  }
}

/** The JSON API of the helper script (add-user / delete-user): list, create, unlock and delete users. */
export async function handleApi(
  client: AdminClient,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): Promise<void> {
  const method = request.method ?? 'GET';
  const origin = request.headers.origin;
  if (method !== 'GET' && origin !== undefined && !sameOrigin(request, origin))
    throw new HttpError(403, 'cross_origin', 'cross-origin request refused');
  if (path === '/api/users' && method === 'GET') {
    json(response, 200, { users: (await client.Passwords.ListUsers({})).users.map(userJson) });
    return;
  }
  if (path === '/api/users' && method === 'POST') {
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json')
      throw new HttpError(415, 'unsupported_media_type', 'Content-Type must be application/json');
    let body: unknown;
    try {
      body = JSON.parse(await readBody(request));
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw new HttpError(400, 'invalid_json', 'the body is not JSON');
    }
    const { email, password } = (body ?? {}) as { email?: unknown; password?: unknown };
    if (typeof email !== 'string' || typeof password !== 'string')
      throw new HttpError(400, 'invalid_argument', 'expected {"email": string, "password": string}');
    json(response, 201, userJson(await client.Passwords.CreateUser({ email, password })));
    return;
  }
  const unlock = /^\/api\/users\/([^/]+)\/unlock$/.exec(path);
  if (unlock !== null) {
    if (method !== 'POST') throw new HttpError(405, 'method_not_allowed', 'no such endpoint');
    json(response, 200, await client.Passwords.UnlockUser({ email: decodeEmail(unlock[1]!) }));
    return;
  }
  const one = /^\/api\/users\/([^/]+)$/.exec(path);
  if (one !== null && method === 'DELETE') {
    json(response, 200, userJson(await client.Passwords.DeleteUser({ email: decodeEmail(one[1]!) })));
    return;
  }
  throw new HttpError(
    path === '/api/users' || one !== null ? 405 : 404,
    path === '/api/users' || one !== null ? 'method_not_allowed' : 'not_found',
    'no such endpoint',
  );
}

// The pages of the administration UI (server.ts): rendered from the administrative gRPC API, and
// their forms, each same-origin and carrying the per-process CSRF token.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminClient } from '../grpc-client.ts';
import { clientsPage, mfaPage, page, passwordsPage, sessionsPage, type PageMessages } from './html.ts';
import { HttpError, fromRpc, html, readBody, redirect, sameOrigin } from './http.ts';

export class AdminPages {
  readonly #client: AdminClient;
  readonly #csrfToken = randomBytes(32).toString('base64url');

  constructor(client: AdminClient) {
    this.#client = client;
  }

  /** The page at `path` (404 page when there is none) with `messages`; `email` refills the create form. */
  async render(path: string, messages: PageMessages, status = 200, email = ''): Promise<[number, string]> {
    const client = this.#client;
    const csrfToken = this.#csrfToken;
    switch (path) {
      case '/passwords':
        return [
          status,
          passwordsPage((await client.Passwords.ListUsers({})).users, csrfToken, messages, email),
        ];
      case '/clients':
        return [status, clientsPage((await client.Clients.ListClients({})).clients, csrfToken, messages)];
      case '/sessions':
        return [status, sessionsPage((await client.Sessions.ListSessions({})).sessions, csrfToken, messages)];
      case '/mfa':
        return [status, mfaPage((await client.Passwords.ListUsers({})).users, csrfToken, messages)];
      default:
        return [404, page(path, 'Not found', '<p>No such page.</p>')];
    }
  }

  /** A form post (POST of a page path): same origin, form-encoded, with the CSRF token. */
  async handleForm(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const client = this.#client;
    const origin = request.headers.origin ?? request.headers.referer;
    if (origin === undefined || !sameOrigin(request, origin))
      throw new HttpError(403, 'cross_origin', 'cross-origin form submission refused');
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/x-www-form-urlencoded')
      throw new HttpError(415, 'unsupported_media_type', 'forms must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(await readBody(request));
    if (!this.#csrfValid(form.get('csrf') ?? undefined))
      throw new HttpError(403, 'csrf', 'missing or invalid CSRF token; reload the page');
    const field = (name: string): string => form.get(name) ?? '';
    switch (path) {
      case '/passwords/create': {
        const email = field('email').trim();
        return this.#formAction(
          response,
          '/passwords',
          async () => {
            const user = await client.Passwords.CreateUser({ email, password: field('password') });
            return `Created ${user.email} (user id ${user.user_id}); the user has no role yet.`;
          },
          email,
        );
      }
      case '/passwords/delete':
        return this.#formAction(response, '/passwords', async () => {
          const user = await client.Passwords.DeleteUser({ email: field('email') });
          return `Deleted ${user.email} (user id ${user.user_id}).`;
        });
      case '/passwords/set':
        return this.#formAction(response, '/passwords', async () => {
          const user = await client.Passwords.SetPassword({
            email: field('email'),
            password: field('password'),
          });
          return `New password set for ${user.email}; their sessions were ended.`;
        });
      case '/passwords/unlock':
        return this.#formAction(response, '/passwords', async () => {
          const result = await client.Passwords.UnlockUser({ email: field('email') });
          return `Sign-in waits of ${result.email} ended (${result.locks_cleared} in force).`;
        });
      case '/clients/regenerate':
        return this.#formAction(response, '/clients', async () => {
          const info = await client.Clients.RegenerateAutomationSecret({});
          return `A new secret for ${info.client_id} was written to work/auth/secrets/automation-client.`;
        });
      case '/sessions/revoke':
        return this.#formAction(response, '/sessions', async () => {
          await client.Sessions.RevokeSession({ id: field('id') });
          return `Session ${field('id')} revoked.`;
        });
      case '/mfa/set': {
        if (field('enabled') !== 'true')
          return this.#formAction(response, '/mfa', async () => {
            const state = await client.Mfa.SetMfa({ email: field('email'), enabled: false });
            return `MFA off for ${state.email}.`;
          });
        // Turning MFA on enrols a TOTP secret, rendered here once (never in a redirect URL).
        let state;
        try {
          state = await client.Mfa.SetMfa({ email: field('email'), enabled: true });
        } catch (error) {
          const failure = error instanceof HttpError ? error : fromRpc(error);
          if (failure.code === 'grpc_unavailable' || failure.status === 500) throw failure;
          const [status, body] = await this.render('/mfa', { error: failure.message }, failure.status);
          html(response, status, body);
          return;
        }
        const users = (await client.Passwords.ListUsers({})).users;
        html(
          response,
          200,
          mfaPage(
            users,
            this.#csrfToken,
            { notice: `MFA on for ${state.email}.` },
            {
              email: state.email,
              secret: state.secret,
              uri: state.otpauth_uri,
            },
          ),
        );
        return;
      }
      default:
        throw new HttpError(404, 'not_found', 'no such action');
    }
  }

  /** A form post: run `action`, then redirect to `back` with a notice, or re-render it with the error. */
  async #formAction(
    response: ServerResponse,
    back: string,
    action: () => Promise<string>,
    keepEmail = '',
  ): Promise<void> {
    let notice: string;
    try {
      notice = await action();
    } catch (error) {
      const failure = error instanceof HttpError ? error : fromRpc(error);
      if (failure.code === 'grpc_unavailable' || failure.status === 500) throw failure;
      const [status, body] = await this.render(back, { error: failure.message }, failure.status, keepEmail);
      html(response, status, body);
      return;
    }
    redirect(response, `${back}?notice=${encodeURIComponent(notice)}`);
  }

  #csrfValid(value: string | undefined): boolean {
    return (
      value !== undefined &&
      value.length === this.#csrfToken.length &&
      timingSafeEqual(Buffer.from(value), Buffer.from(this.#csrfToken))
    );
  }
}

// Minimal server-rendered sign-in and consent pages for the browser flows (authorization code and
// device authorization). Routes under `<issuer path>/interaction/<uid>`:
//   GET  …/<uid>          login form, or consent form once signed in
//   POST …/<uid>/login    username + password (bcrypt check against the IdentityStore)
//   POST …/<uid>/totp     the 6-digit TOTP code, for users with MFA (after a right password)
//   POST …/<uid>/confirm  grant the requested scopes and resource
//   POST …/<uid>/abort    access_denied
// A failed sign-in answers 401 with the form again; nothing entered is echoed except the username.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Provider } from 'oidc-provider';
import type { PasswordSignIn } from './sign-in.ts';
import { clientAddress } from './sign-in.ts';

const MAX_FORM_BYTES = 8 * 1024;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:24rem;margin:4rem auto}label,input,button{display:block;width:100%;margin:.4rem 0}.error{color:#b00}</style>
</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

export async function readForm(
  req: IncomingMessage,
  limit = MAX_FORM_BYTES,
): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function send(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    ...headers,
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    // No form-action: browsers apply it to the redirect chain, which ends at the client's redirect URI.
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  });
  res.end(html);
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

export interface InteractionEvents {
  loginSucceeded(): void;
  loginFailed(locked: boolean): void;
}

export function loginForm(base: string, uid: string, client: string, error?: string, username = ''): string {
  return page(
    'Sign in to svc',
    `<p>Application <b>${escapeHtml(client)}</b> asks you to sign in.</p>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="${escapeHtml(`${base}/${uid}/login`)}" autocomplete="off">
<label>Username or email<input name="username" value="${escapeHtml(username)}" autofocus required></label>
<label>Password<input name="password" type="password" required></label>
<button type="submit" name="action" value="login">Sign in</button>
</form>
<form method="post" action="${escapeHtml(`${base}/${uid}/abort`)}"><button type="submit">Cancel</button></form>`,
  );
}

export function totpForm(base: string, uid: string, client: string, error?: string): string {
  return page(
    'Enter your code',
    `<p>Application <b>${escapeHtml(client)}</b>: enter the 6-digit code from your authenticator app.</p>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="${escapeHtml(`${base}/${uid}/totp`)}" autocomplete="off">
<label>Code<input name="code" inputmode="numeric" pattern="[0-9 ]{6,8}" maxlength="8" autocomplete="one-time-code" autofocus required></label>
<button type="submit" name="action" value="totp">Verify</button>
</form>
<form method="post" action="${escapeHtml(`${base}/${uid}/abort`)}"><button type="submit">Cancel</button></form>`,
  );
}

function lockedPage(res: ServerResponse, retryAfterMs: number, render: (message: string) => string): void {
  const seconds = Math.ceil(retryAfterMs / 1000);
  send(res, 429, render(`Too many failed sign-ins. Try again in ${seconds} seconds.`), {
    'retry-after': String(seconds),
  });
}

function consentForm(base: string, uid: string, client: string, scopes: string[]): string {
  return page(
    'Authorize',
    `<p>Application <b>${escapeHtml(client)}</b> asks for: ${scopes.map((s) => `<code>${escapeHtml(s)}</code>`).join(', ') || 'sign-in only'}.</p>
<form method="post" action="${escapeHtml(`${base}/${uid}/confirm`)}"><button type="submit" name="action" value="confirm">Allow</button></form>
<form method="post" action="${escapeHtml(`${base}/${uid}/abort`)}"><button type="submit">Deny</button></form>`,
  );
}

/** Handles one request under `base` (= `<issuer path>/interaction`); `rest` is the path after it. */
export async function handleInteraction(
  provider: Provider,
  signIn: PasswordSignIn,
  base: string,
  rest: string,
  req: IncomingMessage,
  res: ServerResponse,
  events: InteractionEvents,
): Promise<void> {
  const match = /^\/([A-Za-z0-9_-]{1,128})(?:\/(login|totp|confirm|abort))?$/.exec(rest);
  if (match === null) {
    send(res, 404, page('Not found', '<p>No such page.</p>'));
    return;
  }
  const uid = match[1] as string;
  const action = match[2];
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch {
    send(
      res,
      400,
      page('Sign-in expired', '<p>This sign-in is no longer valid. Start again from the application.</p>'),
    );
    return;
  }
  if (details.uid !== uid) {
    send(res, 400, page('Sign-in expired', '<p>This sign-in does not match your browser session.</p>'));
    return;
  }
  const client = str(details.params['client_id']);
  const method = req.method ?? 'GET';

  if (action === undefined) {
    if (method !== 'GET') {
      send(res, 405, page('Not allowed', ''));
      return;
    }
    if (details.prompt.name === 'login')
      send(
        res,
        200,
        signIn.pendingSecondFactor(uid) === undefined
          ? loginForm(base, uid, client)
          : totpForm(base, uid, client),
      );
    else
      send(res, 200, consentForm(base, uid, client, str(details.params['scope']).split(' ').filter(Boolean)));
    return;
  }
  if (method !== 'POST') {
    send(res, 405, page('Not allowed', ''));
    return;
  }
  const form = await readForm(req);
  if (form === undefined) {
    send(res, 413, page('Too large', ''));
    return;
  }

  if (action === 'abort') {
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'the user cancelled the sign-in' },
      { mergeWithLastSubmission: false },
    );
    return;
  }

  if (action === 'login') {
    if (details.prompt.name !== 'login') {
      send(res, 400, page('Already signed in', ''));
      return;
    }
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    // verifyPassword refuses > 72 bytes; a leftover hash typed as the password simply does not match.
    const result = await signIn.verify(username, password, clientAddress(req));
    if (!result.ok) {
      events.loginFailed(result.reason === 'locked');
      if (result.reason === 'locked')
        lockedPage(res, result.retryAfterMs, (message) => loginForm(base, uid, client, message, username));
      else send(res, 401, loginForm(base, uid, client, 'Invalid username or password.', username));
      return;
    }
    const user = result.user;
    if (signIn.mfaRequired(user)) {
      signIn.awaitSecondFactor(uid, user, result.userKey);
      send(res, 200, totpForm(base, uid, client));
      return;
    }
    signIn.succeeded(result.userKey, clientAddress(req));
    events.loginSucceeded();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.user_id } },
      { mergeWithLastSubmission: false },
    );
    return;
  }

  if (action === 'totp') {
    if (details.prompt.name !== 'login' || signIn.pendingSecondFactor(uid) === undefined) {
      send(res, 400, page('Sign-in expired', '<p>Enter your password again.</p>'));
      return;
    }
    const result = signIn.verifySecondFactor(uid, form.get('code') ?? '', clientAddress(req));
    if (!result.ok) {
      events.loginFailed(result.reason === 'locked');
      if (result.reason === 'locked')
        lockedPage(res, result.retryAfterMs, (message) => totpForm(base, uid, client, message));
      else send(res, 401, totpForm(base, uid, client, 'The code is not valid. Try the current one.'));
      return;
    }
    signIn.succeeded(result.userKey, clientAddress(req));
    events.loginSucceeded();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: result.user.user_id, amr: ['pwd', 'otp'] } },
      { mergeWithLastSubmission: false },
    );
    return;
  }

  // confirm
  if (details.prompt.name !== 'consent' || details.session?.accountId === undefined) {
    send(res, 400, page('Not signed in', ''));
    return;
  }
  const prompt = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const grant =
    (details.grantId === undefined ? undefined : await provider.Grant.find(details.grantId)) ??
    new provider.Grant({ accountId: details.session.accountId, clientId: client });
  if (prompt.missingOIDCScope !== undefined) grant.addOIDCScope(prompt.missingOIDCScope.join(' '));
  if (prompt.missingOIDCClaims !== undefined) grant.addOIDCClaims(prompt.missingOIDCClaims);
  for (const [resource, scopes] of Object.entries(prompt.missingResourceScopes ?? {}))
    grant.addResourceScope(resource, scopes.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

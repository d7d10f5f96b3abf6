// Server-rendered pages of the administration UI. Everything is inline (no external asset, no
// script); every value is escaped; every form carries the CSRF token.
import type { AdminUser, OAuthClientInfo } from '../service.ts';
import type { SessionMessage } from '../grpc-proto.ts';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.4rem;align-items:center}
header a{color:#cfd6e4;text-decoration:none}header a[aria-current=page]{color:#fff;font-weight:600}
header strong{margin-right:1rem}main{padding:1.2rem;max-width:64rem}
table{border-collapse:collapse;width:100%;background:#fff;margin:.6rem 0 1.4rem}
th,td{border-bottom:1px solid #e3e6eb;padding:.4rem .6rem;text-align:left;vertical-align:middle}
th{background:#eef0f4;font-weight:600}form.inline{display:inline}
fieldset{background:#fff;border:1px solid #d5d9e0;padding:.8rem 1rem;margin:0 0 1.4rem}
label{display:inline-block;margin-right:1rem}input[type=email],input[type=password]{padding:.3rem;min-width:16rem}
button{padding:.3rem .8rem;cursor:pointer}.notice{background:#e7f5ea;border:1px solid #9bd0a6;padding:.5rem .8rem}
.error{background:#fbeaea;border:1px solid #e0a1a1;padding:.5rem .8rem}.muted{color:#6b7385}
`;

const NAV = [
  ['/passwords', 'Passwords'],
  ['/clients', 'OAuth clients'],
  ['/sessions', 'Sessions'],
  ['/mfa', 'MFA'],
] as const;

export interface PageMessages {
  notice?: string | undefined;
  error?: string | undefined;
}

export function page(path: string, title: string, body: string, messages: PageMessages = {}): string {
  const nav = NAV.map(
    ([href, label]) => `<a href="${href}"${href === path ? ' aria-current="page"' : ''}>${label}</a>`,
  ).join('');
  const notice =
    messages.notice === undefined ? '' : `<p class="notice" role="status">${escapeHtml(messages.notice)}</p>`;
  const error =
    messages.error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(messages.error)}</p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · svc administration</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style></head>
<body><header><strong>svc administration</strong><nav>${nav}</nav></header>
<main><h1>${escapeHtml(title)}</h1>${notice}${error}${body}</main></body></html>
`;
}

const csrfField = (token: string): string => `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;

function postButton(
  action: string,
  token: string,
  fields: Record<string, string>,
  label: string,
  confirm?: string,
): string {
  const hidden = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join('');
  const aria = confirm === undefined ? '' : ` aria-label="${escapeHtml(confirm)}"`;
  return `<form class="inline" method="post" action="${action}">${csrfField(token)}${hidden}<button type="submit"${aria}>${label}</button></form>`;
}

export function passwordsPage(
  users: readonly AdminUser[],
  token: string,
  messages: PageMessages,
  email = '',
): string {
  const rows = users
    .map((user) => {
      const unlock = postButton(
        '/passwords/unlock',
        token,
        { email: user.email },
        'End sign-in waits',
        `End the password-guessing waits of ${user.email}`,
      );
      const actions = user.static
        ? `<span class="muted">static identity</span> ${unlock}`
        : `${unlock} <form class="inline" method="post" action="/passwords/set">${csrfField(token)}<input type="hidden" name="email" value="${escapeHtml(user.email)}"><input type="password" name="password" autocomplete="new-password" aria-label="New password for ${escapeHtml(user.email)}" placeholder="new password" required> <button type="submit">Set password</button></form> ` +
          postButton('/passwords/delete', token, { email: user.email }, 'Delete', `Delete ${user.email}`);
      return `<tr data-email="${escapeHtml(user.email)}"><td>${escapeHtml(user.email)}</td><td>${escapeHtml(user.username)}</td><td><code>${escapeHtml(user.user_id)}</code></td><td>${escapeHtml(user.created_at)}</td><td>${actions}</td></tr>`;
    })
    .join('\n');
  const body = `
<table id="users"><thead><tr><th>Email</th><th>Username</th><th>User ID (principal)</th><th>Created</th><th>Actions</th></tr></thead>
<tbody>${rows}</tbody></table>
<h2>Create a password</h2>
<form method="post" action="/passwords/create"><fieldset>${csrfField(token)}
<label>Email <input type="email" name="email" autocomplete="off" required value="${escapeHtml(email)}"></label>
<label>Password <input type="password" name="password" autocomplete="new-password" required></label>
<button type="submit">Create</button>
<p class="muted">The user can sign in at once, with no role: bind a role with <code>POST /svc/principal/&lt;user id&gt;</code> (or use <code>svc-auth.sh add-user</code>). Passwords are 12 characters to 72 bytes.</p>
</fieldset></form>`;
  return page('/passwords', 'Passwords', body, messages);
}

export function clientsPage(
  clients: readonly OAuthClientInfo[],
  token: string,
  messages: PageMessages,
): string {
  const rows = clients
    .map((client) => {
      const secret =
        client.type !== 'confidential'
          ? '<span class="muted">public client</span>'
          : `${client.secret_present ? `written ${escapeHtml(client.secret_updated_at)}` : 'missing'} ` +
            postButton(
              '/clients/regenerate',
              token,
              {},
              'Regenerate secret',
              `Regenerate the secret of ${client.client_id}`,
            );
      return `<tr data-client="${escapeHtml(client.client_id)}"><td><code>${escapeHtml(client.client_id)}</code></td><td>${escapeHtml(client.type)}</td><td>${escapeHtml(client.purpose)}</td><td>${secret}</td></tr>`;
    })
    .join('\n');
  const body = `<table id="clients"><thead><tr><th>Client ID</th><th>Type</th><th>Purpose</th><th>Secret</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">A regenerated secret is written to <code>work/auth/secrets/automation-client</code> on this host and is never shown here. The principal <code>client:svc-automation</code> stays the same.</p>`;
  return page('/clients', 'OAuth clients', body, messages);
}

export function sessionsPage(
  sessions: readonly SessionMessage[],
  token: string,
  messages: PageMessages,
): string {
  const rows = sessions
    .map(
      (session) =>
        `<tr data-session="${escapeHtml(session.id)}"><td><code>${escapeHtml(session.id)}</code></td><td>${escapeHtml(session.subject)}</td><td>${escapeHtml(session.client_id)}</td><td>${escapeHtml(session.kind)}</td><td>${escapeHtml(session.created_at)}</td><td>${escapeHtml(session.expires_at)}</td><td>${postButton('/sessions/revoke', token, { id: session.id }, 'Revoke', `Revoke session ${session.id}`)}</td></tr>`,
    )
    .join('\n');
  const body =
    sessions.length === 0
      ? '<p class="muted" id="no-sessions">No sessions.</p>'
      : `<table id="sessions"><thead><tr><th>ID</th><th>Subject</th><th>Client</th><th>Kind</th><th>Created</th><th>Expires</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
  return page('/sessions', 'Sessions', body, messages);
}

/** Shown once, right after MFA is turned on: the secret for the user's authenticator app. */
export interface TotpEnrolment {
  email: string;
  secret: string;
  uri: string;
}

function enrolmentBlock(enrolment: TotpEnrolment): string {
  return `<section id="enrolment" class="notice" role="status"><h2>TOTP enrolment for ${escapeHtml(enrolment.email)}</h2>
<p>Add this to the user's authenticator app now: it is shown only once (stored encrypted).</p>
<p>Secret (base32): <code id="totp-secret">${escapeHtml(enrolment.secret)}</code></p>
<p>URI: <code id="totp-uri">${escapeHtml(enrolment.uri)}</code></p>
<p class="muted">From the next sign-in, the browser and device flows ask for the 6-digit code after the password; the password grant refuses this user.</p></section>`;
}

export function mfaPage(
  users: readonly AdminUser[],
  token: string,
  messages: PageMessages,
  enrolment?: TotpEnrolment,
): string {
  const rows = users
    .map((user) => {
      const action = user.static
        ? '<span class="muted">static identity</span>'
        : postButton(
            '/mfa/set',
            token,
            { email: user.email, enabled: user.mfa_enabled ? 'false' : 'true' },
            user.mfa_enabled ? 'Turn off' : 'Turn on',
            `${user.mfa_enabled ? 'Turn off' : 'Turn on'} MFA for ${user.email}`,
          );
      return `<tr data-email="${escapeHtml(user.email)}"><td>${escapeHtml(user.email)}</td><td class="mfa-state">${user.mfa_enabled ? 'on' : 'off'}</td><td>${action}</td></tr>`;
    })
    .join('\n');
  const body = `${enrolment === undefined ? '' : enrolmentBlock(enrolment)}<table id="mfa"><thead><tr><th>Email</th><th>MFA</th><th></th></tr></thead><tbody>${rows}</tbody></table>`;
  return page('/mfa', 'MFA', body, messages);
}

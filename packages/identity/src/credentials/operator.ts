// The work behind script/svc-auth.sh (spec: "Operator helper commands"), called through
// bin/credentials-cli.ts. Secrets arrive on stdin and leave only on stdout when the action's purpose
// is to print them (print-initial-password, the token actions); errors never contain them.
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { BUILTIN_ROLES } from '@svc/protocol';
import { isMap, parseDocument } from 'yaml';
import { STATIC_IDENTITIES, AUTOMATION_CLIENT_ID } from '../store/identities.ts';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { readAutomationSecret, type AuthMode } from './bootstrap.ts';
import { credentialFilePath, readCredentialFile, writeCredentialFile } from './credential-file.ts';
import { CredentialError } from './errors.ts';
import { generatePassword, hashPassword, passwordProblem } from './password.ts';

/** A failure of an operator action; `exitCode` 3 marks a reachability error. */
export class OperatorError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'OperatorError';
    this.exitCode = exitCode;
  }
}

export const EXIT_UNREACHABLE = 3;
export const API_AUDIENCE_SCOPE = 'audience:server:client_id:svc-api';
export const USER_TOKEN_SCOPE = `openid ${API_AUDIENCE_SCOPE}`;
const CLI_CLIENT_ID = 'svc-cli';

/** Stdin holding one password line: one trailing newline removed, at most 72 bytes. */
export function passwordFromStdin(text: string): string {
  const password = text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text;
  if (password.includes('\n')) throw new OperatorError('stdin must hold exactly one line (the password)');
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new OperatorError(`stdin: ${problem}`);
  return password;
}

// ---- administrator credential -------------------------------------------------------------

export async function printInitialPassword(workDir: string): Promise<string> {
  const file = credentialFilePath(workDir, 'admin');
  const credential = await readCredentialFile(file, 'admin');
  if (credential.password === undefined)
    throw new OperatorError(
      `${file}: no password= line (the plaintext was forgotten); rotate-initial-password is the only recovery path`,
    );
  return credential.password;
}

/** Replace the admin hash and plaintext; active after the next restart of svc. */
export async function setInitialPassword(workDir: string, password: string): Promise<void> {
  const file = credentialFilePath(workDir, 'admin');
  const current = await readCredentialFile(file, 'admin');
  await writeCredentialFile(file, { ...current, password_hash: await hashPassword(password), password });
}

export async function rotateInitialPassword(workDir: string): Promise<void> {
  await setInitialPassword(workDir, generatePassword());
}

/** Remove the plaintext line only; the password is unchanged. */
export async function forgetInitialPassword(workDir: string): Promise<boolean> {
  const file = credentialFilePath(workDir, 'admin');
  const current = await readCredentialFile(file, 'admin');
  if (current.password === undefined) return false;
  const { password: _forgotten, ...rest } = current;
  await writeCredentialFile(file, rest);
  return true;
}

// ---- settings ----------------------------------------------------------------------------

async function readYamlMap(file: string): Promise<Record<string, unknown>> {
  try {
    const value: unknown = parseDocument(await readFile(file, 'utf8')).toJS();
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
}

/** `Auth.Mode` of a sectioned configuration document, else the earlier flat `auth_mode`. */
function authModeOf(document: Record<string, unknown>): unknown {
  const section = document['Auth'];
  const sectioned =
    typeof section === 'object' && section !== null
      ? (section as Record<string, unknown>)['Mode']
      : undefined;
  return sectioned ?? document['auth_mode'];
}

/** SVC_AUTH_MODE, else `Auth.Mode` of work/config/config.yaml, else of config/config.yaml, else builtin. */
export async function authMode(home: string, env: NodeJS.ProcessEnv): Promise<AuthMode> {
  let mode = env['SVC_AUTH_MODE'];
  if (mode === undefined || mode === '') {
    const override = await readYamlMap(join(home, 'work', 'config', 'config.yaml'));
    const base = await readYamlMap(join(home, 'config', 'config.yaml'));
    const value = authModeOf(override) ?? authModeOf(base);
    mode = typeof value === 'string' ? value : 'builtin';
  }
  if (mode !== 'builtin' && mode !== 'external')
    throw new OperatorError(`SVC_AUTH_MODE: expected builtin or external, got ${JSON.stringify(mode)}`);
  return mode;
}

async function readPortsFile(file: string): Promise<Record<string, unknown>> {
  try {
    const value: unknown = JSON.parse(await readFile(file, 'utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Bound ports: work/ports.json (svcd), over the records of svc-identity and svc-auth-admin. */
async function boundPorts(home: string): Promise<Record<string, unknown>> {
  return {
    ...(await readPortsFile(join(home, 'work', 'ports.identity.json'))),
    ...(await readPortsFile(join(home, 'work', 'ports.authadmin.json'))),
    ...(await readPortsFile(join(home, 'work', 'ports.json'))),
  };
}

/**
 * The port of `listener` as this SVC_HOME's instance recorded it (work/ports.json and the records
 * of svc-identity and svc-auth-admin). Never a default port: on a machine with another svc
 * instance, the default port is that instance's, and a helper action reaches only its own.
 */
async function ownPort(home: string, listener: 'issuer' | 'admin_ui', what: string): Promise<number> {
  const bound = (await boundPorts(home))[listener];
  if (typeof bound === 'number' && Number.isInteger(bound) && bound > 0 && bound < 65536) return bound;
  throw new OperatorError(
    `${what} of ${home} is unreachable: its work/ports.json records no ${listener} listener (is svc running in builtin mode with this SVC_HOME?)`,
    EXIT_UNREACHABLE,
  );
}

/** The issuer's token endpoint, on the `issuer` port this SVC_HOME's instance recorded. */
export async function tokenEndpoint(home: string, _env: NodeJS.ProcessEnv): Promise<string> {
  return `http://127.0.0.1:${await ownPort(home, 'issuer', 'the issuer')}/auth/token`;
}

/** Where the administration UI listens: an HTTP base URL, and a Unix socket when it is on one. */
export interface AdminUiTarget {
  readonly url: string;
  readonly socketPath: string | undefined;
}

/**
 * The administration UI this SVC_HOME's instance recorded: its Unix socket (`admin_ui_socket` in
 * work/ports.authadmin.json, when SVC_AUTH_ADMIN_LISTEN=unix:/path), else its `admin_ui` port.
 */
export async function adminUiUrl(home: string, env: NodeJS.ProcessEnv): Promise<AdminUiTarget> {
  const setting = (env['SVC_AUTH_ADMIN_UI'] ?? '').trim().toLowerCase();
  if (setting === 'off')
    throw new OperatorError(
      'the administration UI is disabled (SVC_AUTH_ADMIN_UI=off): it is the only management transport, so it is unreachable; set SVC_AUTH_ADMIN_UI=on and restart svc',
      EXIT_UNREACHABLE,
    );
  const socket = (await boundPorts(home))['admin_ui_socket'];
  if (typeof socket === 'string' && socket.startsWith('/'))
    return { url: 'http://localhost', socketPath: socket };
  return {
    url: `http://127.0.0.1:${await ownPort(home, 'admin_ui', 'the administration UI')}`,
    socketPath: undefined,
  };
}

// ---- HTTP ---------------------------------------------------------------------------------

async function request(
  target: string | { url: string; socketPath: string | undefined },
  init: { method?: string; headers?: Record<string, string>; body?: string },
  what: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { url, socketPath } = typeof target === 'string' ? { url: target, socketPath: undefined } : target;
  let status: number;
  let text: string;
  try {
    if (socketPath === undefined) {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
      status = response.status;
      text = await response.text();
    } else ({ status, text } = await requestOverSocket(socketPath, url, init));
  } catch (error) {
    const cause =
      (error as { cause?: { code?: string } }).cause?.code ??
      (error as NodeJS.ErrnoException).code ??
      (error as Error).name;
    const where = socketPath === undefined ? new URL(url).origin : `unix:${socketPath}`;
    throw new OperatorError(`${what} at ${where} is unreachable (${cause})`, EXIT_UNREACHABLE);
  }
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
  } catch {
    // not JSON: reported by status below
  }
  return { status, body };
}

/** One HTTP request over a Unix socket (fetch cannot use one). */
function requestOverSocket(
  socketPath: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; text: string }> {
  const { pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath,
        path: pathname + search,
        method: init.method ?? 'GET',
        headers: { host: 'localhost', ...init.headers },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(init.body);
  });
}

function describeFailure(status: number, body: Record<string, unknown>): string {
  const parts = [String(status)];
  for (const key of ['error', 'error_description', 'message']) {
    const value = body[key];
    if (typeof value === 'string') parts.push(value);
  }
  return parts.join(' ');
}

function basic(clientId: string, secret: string): string {
  // RFC 6749 2.3.1: form-encode both parts before base64.
  const encode = (value: string): string => encodeURIComponent(value).replaceAll('%20', '+');
  return 'Basic ' + Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64');
}

async function tokenRequest(
  endpoint: string,
  authorization: string,
  form: Record<string, string>,
): Promise<string> {
  const { status, body } = await request(
    endpoint,
    {
      method: 'POST',
      headers: {
        authorization,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams(form).toString(),
    },
    'the token endpoint',
  );
  const token = body['access_token'];
  if (status !== 200 || typeof token !== 'string')
    throw new OperatorError(`token request refused: ${describeFailure(status, body)}`);
  return token;
}

/** Password grant with the public client svc-cli; resolves the access token. */
export async function userToken(endpoint: string, email: string, password: string): Promise<string> {
  return tokenRequest(endpoint, basic(CLI_CLIENT_ID, ''), {
    grant_type: 'password',
    username: email,
    password,
    scope: USER_TOKEN_SCOPE,
  });
}

/** Client-credentials grant with svc-automation and the secret of work/auth/secrets/automation-client. */
export async function automationToken(workDir: string, endpoint: string): Promise<string> {
  const secret = await readAutomationSecret(workDir);
  return tokenRequest(endpoint, basic(AUTOMATION_CLIENT_ID, secret), {
    grant_type: 'client_credentials',
    scope: API_AUDIENCE_SCOPE,
  });
}

// ---- users and role bindings --------------------------------------------------------------

function isStaticIdentity(email: string): boolean {
  const lower = email.toLowerCase();
  return Object.values(STATIC_IDENTITIES).some(
    (s) => s.email.toLowerCase() === lower || s.username === lower,
  );
}

export function policyFilePath(workDir: string): string {
  return join(workDir, 'auth', 'policy.yaml');
}

async function readPolicy(workDir: string) {
  const file = policyFilePath(workDir);
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    throw new OperatorError(`${file}: not valid YAML; fix it before using this action`);
  if (doc.contents !== null && !isMap(doc.contents)) throw new OperatorError(`${file}: must be a mapping`);
  return { file, doc };
}

/** Whether `role` is built in or defined under `roles:` in work/auth/policy.yaml. */
export async function roleExists(workDir: string, role: string): Promise<boolean> {
  if (Object.hasOwn(BUILTIN_ROLES, role)) return true;
  const { doc } = await readPolicy(workDir);
  const roles: unknown = (doc.toJS() as { roles?: unknown } | null)?.roles;
  return typeof roles === 'object' && roles !== null && Object.hasOwn(roles, role);
}

/** Bind `role` to `principalId` in policy.yaml; resolves whether a record existed before. */
export async function bindRole(workDir: string, principalId: string, role: string): Promise<boolean> {
  const { file, doc } = await readPolicy(workDir);
  const existing: unknown = doc.getIn(['principals', principalId]);
  const before = (doc.toJS() as { principals?: Record<string, { roles?: string[] }> } | null)?.principals?.[
    principalId
  ];
  const roles = [...new Set([...(before?.roles ?? []), role])];
  doc.setIn(['principals', principalId], doc.createNode({ roles, status: 'active' }));
  await writeFileAtomic(file, doc.toString(), { mode: 0o600, ownerFromDirectory: true });
  return existing !== undefined;
}

/** Hard-delete the principal block; resolves whether there was one. */
export async function removePrincipal(workDir: string, principalId: string): Promise<boolean> {
  const { file, doc } = await readPolicy(workDir);
  if (!doc.hasIn(['principals', principalId])) return false;
  doc.deleteIn(['principals', principalId]);
  await writeFileAtomic(file, doc.toString(), { mode: 0o600, ownerFromDirectory: true });
  return true;
}

interface AdminUser {
  user_id: string;
  email: string;
}

function adminUser(body: Record<string, unknown>): AdminUser | undefined {
  const { user_id, email } = body;
  return typeof user_id === 'string' && typeof email === 'string' ? { user_id, email } : undefined;
}

export interface AddUserResult {
  readonly userId: string;
  readonly principalId: string;
  readonly identityExisted: boolean;
  /** The POST /svc/principal/<id> request to send when the engine may hold a role-less record. */
  readonly followUp: string | undefined;
}

export async function addUser(options: {
  home: string;
  env: NodeJS.ProcessEnv;
  email: string;
  role: string;
  password: string;
}): Promise<AddUserResult> {
  const { home, env, email, role } = options;
  const workDir = join(home, 'work');
  if (isStaticIdentity(email))
    throw new OperatorError('add-user rejects the static identities admin and guest');
  if ((await authMode(home, env)) !== 'builtin')
    throw new OperatorError(
      'add-user needs builtin mode (SVC_AUTH_MODE=builtin) on the authentication owner',
    );
  if (!(await roleExists(workDir, role)))
    throw new OperatorError(`role ${JSON.stringify(role)} does not exist in ${policyFilePath(workDir)}`);
  const base = await adminUiUrl(home, env);
  const created = await request(
    { ...base, url: `${base.url}/api/users` },
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ email, password: options.password }),
    },
    'the administration UI',
  );
  let user = created.status === 201 ? adminUser(created.body) : undefined;
  let identityExisted = false;
  if (created.status === 409) {
    // The identity exists (e.g. created under Passwords): bind the role to it; password unchanged.
    const listed = await request(
      { ...base, url: `${base.url}/api/users` },
      { headers: { accept: 'application/json' } },
      'the administration UI',
    );
    const users = Array.isArray(listed.body['users'])
      ? (listed.body['users'] as Record<string, unknown>[])
      : [];
    user = users.map(adminUser).find((u) => u !== undefined && u.email.toLowerCase() === email.toLowerCase());
    identityExisted = user !== undefined;
  }
  if (user === undefined)
    throw new OperatorError(
      `the administration UI refused to create the user: ${describeFailure(created.status, created.body)}`,
    );
  const principalId = user.user_id;
  const recordExisted = await bindRole(workDir, principalId, role);
  const followUp =
    recordExisted || identityExisted
      ? `POST /svc/principal/${encodeURIComponent(principalId)} ${JSON.stringify({ roles: [role] })}`
      : undefined;
  return { userId: user.user_id, principalId, identityExisted, followUp };
}

export interface DeleteUserResult {
  readonly userId: string;
  readonly principalId: string;
  readonly principalRemoved: boolean;
}

export async function deleteUser(options: {
  home: string;
  env: NodeJS.ProcessEnv;
  email: string;
}): Promise<DeleteUserResult> {
  const { home, env, email } = options;
  if (isStaticIdentity(email))
    throw new OperatorError('delete-user rejects the static identities admin and guest');
  const base = await adminUiUrl(home, env);
  const deleted = await request(
    { ...base, url: `${base.url}/api/users/${encodeURIComponent(email)}` },
    { method: 'DELETE', headers: { accept: 'application/json' } },
    'the administration UI',
  );
  const user = deleted.status === 200 ? adminUser(deleted.body) : undefined;
  if (deleted.status === 404)
    throw new OperatorError(`no user ${JSON.stringify(email)}; no principal record was removed`);
  if (user === undefined)
    throw new OperatorError(
      `the administration UI refused to delete the user: ${describeFailure(deleted.status, deleted.body)}`,
    );
  const principalRemoved = await removePrincipal(join(home, 'work'), user.user_id);
  return { userId: user.user_id, principalId: user.user_id, principalRemoved };
}

/** Clears a user's sign-in lockout (static identities too); resolves how many locks were in force. */
export async function unlockUser(options: {
  home: string;
  env: NodeJS.ProcessEnv;
  email: string;
}): Promise<{ userId: string; locksCleared: number }> {
  const base = await adminUiUrl(options.home, options.env);
  const result = await request(
    {
      ...base,
      url: `${base.url}/api/users/${encodeURIComponent(options.email)}/unlock`,
    },
    { method: 'POST', headers: { accept: 'application/json' } },
    'the administration UI',
  );
  if (result.status === 404) throw new OperatorError(`no user ${JSON.stringify(options.email)}`);
  const userId = result.body['user_id'];
  const cleared = result.body['locks_cleared'];
  if (result.status !== 200 || typeof userId !== 'string')
    throw new OperatorError(
      `the administration UI refused to clear the lockout: ${describeFailure(result.status, result.body)}`,
    );
  return { userId, locksCleared: typeof cleared === 'number' ? cleared : 0 };
}

export { CredentialError };

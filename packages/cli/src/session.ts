// The session file (`$SVC_CONFIG_DIR/session.json`, default ~/.config/svc/session.json, mode 600):
// the tokens of `svc login` with the server they belong to and their expiry. Tokens are read and
// written here only; nothing prints them.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError, EXIT } from './errors.ts';

export interface Session {
  version: 1;
  /** The svc server (REST base URL) the tokens were obtained for. */
  server: string;
  issuer: string;
  client_id: string;
  access_token: string;
  refresh_token?: string | undefined;
  /** Access token expiry, epoch seconds. */
  expires_at: number;
  /** The grant that created the session (authorization_code, device_code, password). */
  grant: string;
}

export function configDir(): string {
  const dir = process.env['SVC_CONFIG_DIR'];
  if (dir !== undefined && dir !== '') return dir;
  const xdg = process.env['XDG_CONFIG_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.config'), 'svc');
}

export function sessionPath(): string {
  return join(configDir(), 'session.json');
}

export function readSession(): Session | undefined {
  let text: string;
  try {
    text = readFileSync(sessionPath(), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Session;
    if (typeof parsed.access_token !== 'string' || typeof parsed.server !== 'string')
      throw new Error('shape');
    return parsed;
  } catch {
    throw new CliError(
      `the session file ${sessionPath()} is damaged`,
      EXIT.auth,
      'run `svc logout` and `svc login` again',
    );
  }
}

/** Writes the session through a temp file created with mode 600, then renames it into place. */
export function writeSession(session: Session): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = sessionPath();
  const temp = join(dir, `.session.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(temp, JSON.stringify(session, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(temp, 0o600); // whatever the umask
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

export function removeSession(): boolean {
  const file = sessionPath();
  try {
    readFileSync(file);
  } catch {
    return false;
  }
  rmSync(file, { force: true });
  return true;
}

/** The `exp` claim of a JWT (seconds), without verifying it; undefined when not a JWT. */
export function jwtExpiry(token: string): number | undefined {
  const part = token.split('.')[1];
  if (part === undefined) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof payload.exp === 'number' ? payload.exp : undefined;
  } catch {
    return undefined;
  }
}

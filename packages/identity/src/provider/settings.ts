// Settings of svc-identity: `config/oidc.yaml` (install root, then SVC_HOME) overlaid by the environment
// (CONTRACT §3). Only non-secret values live here; secrets come from work/auth/secrets/.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_THROTTLE_LIMITS, type ThrottleLimits } from './sign-in-throttle.ts';

export interface IdentitySettings {
  readonly home: string;
  readonly workDir: string;
  readonly mode: 'builtin' | 'external';
  /** Loopback address of both listeners. */
  readonly host: string;
  readonly issuerPort: number;
  readonly telemetryPort: number;
  /** `SVC_AUTH_PASSWORD_FLOW=false` or `OIDC.password_flow: false` turn the password grant off. */
  readonly passwordFlow: boolean;
  /** Redirect URIs of the browser client `svc-web`. */
  readonly webRedirectUris: readonly string[];
  /** Password-guessing limits (`OIDC.sign_in_throttle`), the defaults where unset. */
  readonly signInThrottle: ThrottleLimits;
}

export class SettingsError extends Error {}

/**
 * `{hostname}` in a redirect URI stands for this host's name (os.hostname()) and `{agent_port}` for
 * the agent's port (SVC_AGENT_PORT, which svcd passes to its system apps; 6060 by default), so the
 * defaults name the agent's own origin however the host is called. The web UI (packages/web)
 * returns to the agent's root, `https://<host>:<agent port>/`. On a loopback host (127.0.0.1,
 * [::1], localhost) the port is not compared (RFC 8252 §7.3, loopback-redirect.ts): an SSH tunnel
 * to the agent on any local port signs in too.
 */
export const HOSTNAME_PLACEHOLDER = '{hostname}';
export const AGENT_PORT_PLACEHOLDER = '{agent_port}';
export const DEFAULT_AGENT_PORT = 6060;

export const DEFAULT_WEB_REDIRECT_URIS = [
  `https://127.0.0.1:${AGENT_PORT_PLACEHOLDER}/`,
  `https://[::1]:${AGENT_PORT_PLACEHOLDER}/`,
  `https://localhost:${AGENT_PORT_PLACEHOLDER}/`,
  `https://${HOSTNAME_PLACEHOLDER}:${AGENT_PORT_PLACEHOLDER}/`,
  `https://127.0.0.1:${AGENT_PORT_PLACEHOLDER}/auth/callback`,
  `https://localhost:${AGENT_PORT_PLACEHOLDER}/auth/callback`,
];

/**
 * The URIs with `{hostname}` replaced by `host` (lower-cased; a URI naming a host URLs cannot carry
 * is skipped) and `{agent_port}` by `agentPort`.
 */
export function expandRedirectUris(
  uris: readonly string[],
  host: string,
  agentPort: number = DEFAULT_AGENT_PORT,
): string[] {
  const name = host.toLowerCase();
  const usable = /^[a-z0-9.-]{1,253}$/.test(name);
  const out: string[] = [];
  for (const uri of uris) {
    if (uri.includes(HOSTNAME_PLACEHOLDER) && !usable) continue;
    out.push(
      uri.split(HOSTNAME_PLACEHOLDER).join(name).split(AGENT_PORT_PLACEHOLDER).join(String(agentPort)),
    );
  }
  return [...new Set(out)];
}

/** The default redirect URIs of svc-web for this host and agent port. */
export function defaultWebRedirectUris(agentPort: number = DEFAULT_AGENT_PORT): string[] {
  return expandRedirectUris(DEFAULT_WEB_REDIRECT_URIS, hostname(), agentPort);
}

function port(value: string | number | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new SettingsError(`${name}: not a port number`);
  return n;
}

function flag(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^(true|1|yes|on)$/i.test(value)) return true;
  if (/^(false|0|no|off)$/i.test(value)) return false;
  throw new SettingsError(`${name}: expected true or false`);
}

interface OidcFile {
  OIDC?: {
    password_flow?: unknown;
    web_redirect_uris?: unknown;
    sign_in_throttle?: unknown;
    issuer_port?: unknown;
    telemetry_port?: unknown;
  };
}

/**
 * `config/oidc.yaml` of the install root, overlaid key by key (under `OIDC`) by the one in SVC_HOME
 * when SVC_HOME is elsewhere (CONTRACT §2: the install root holds the defaults, SVC_HOME may
 * override them). Either may be absent. Exported for the daemon's builtin wiring.
 */
export async function readOidcFile(home: string, installRoot: string = home): Promise<OidcFile> {
  const own = await readOneOidcFile(home);
  if (resolve(home) === resolve(installRoot)) return own;
  const defaults = await readOneOidcFile(installRoot);
  return { OIDC: { ...defaults.OIDC, ...own.OIDC } };
}

async function readOneOidcFile(root: string): Promise<OidcFile> {
  let text: string;
  try {
    text = await readFile(join(root, 'config', 'oidc.yaml'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  const parsed: unknown = parseYaml(text);
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new SettingsError('config/oidc.yaml: not a mapping');
  return parsed;
}

/** Whether the password grant is on: the variable wins over the file; default on. */
export function passwordFlowEnabled(file: OidcFile, env: NodeJS.ProcessEnv): boolean {
  const fromEnv = flag(env['SVC_AUTH_PASSWORD_FLOW'], 'SVC_AUTH_PASSWORD_FLOW');
  if (fromEnv !== undefined) return fromEnv;
  const fromFile = file.OIDC?.password_flow;
  if (fromFile === undefined || fromFile === null) return true;
  if (typeof fromFile !== 'boolean')
    throw new SettingsError('config/oidc.yaml: OIDC.password_flow must be true or false');
  return fromFile;
}

/** `OIDC.sign_in_throttle` keys, their ThrottleLimits field and the accepted range. */
const THROTTLE_KEYS: readonly (readonly [string, keyof ThrottleLimits, number, number])[] = [
  ['user_address_failures', 'userAddressFailures', 1, 1_000_000],
  ['address_failures', 'addressFailures', 1, 1_000_000],
  ['user_failures', 'userFailures', 1, 1_000_000],
  ['base_delay_ms', 'baseDelayMs', 1, 86_400_000],
  ['max_delay_ms', 'maxDelayMs', 1, 86_400_000],
  ['forget_after_ms', 'forgetMs', 1, 30 * 86_400_000],
  ['max_entries', 'maxEntries', 100, 10_000_000],
];

/** The password-guessing limits: `OIDC.sign_in_throttle` over DEFAULT_THROTTLE_LIMITS. */
export function signInThrottleLimits(file: OidcFile): ThrottleLimits {
  const given = file.OIDC?.sign_in_throttle ?? {};
  if (given === null || typeof given !== 'object' || Array.isArray(given))
    throw new SettingsError('config/oidc.yaml: OIDC.sign_in_throttle must be a mapping');
  const values = given as Record<string, unknown>;
  const known = new Set(THROTTLE_KEYS.map(([key]) => key));
  const unknown = Object.keys(values).find((key) => !known.has(key));
  if (unknown !== undefined)
    throw new SettingsError(`config/oidc.yaml: OIDC.sign_in_throttle.${unknown} is not a setting`);
  const limits: Record<string, number> = { ...DEFAULT_THROTTLE_LIMITS };
  for (const [key, field, min, max] of THROTTLE_KEYS) {
    const value = values[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      throw new SettingsError(
        `config/oidc.yaml: OIDC.sign_in_throttle.${key} must be an integer from ${min} to ${max}`,
      );
    limits[field] = value;
  }
  const result = limits as unknown as ThrottleLimits;
  if (result.maxDelayMs < result.baseDelayMs || result.forgetMs < result.maxDelayMs)
    throw new SettingsError(
      'config/oidc.yaml: OIDC.sign_in_throttle needs base_delay_ms <= max_delay_ms <= forget_after_ms',
    );
  return result;
}

/** `defaultHome` is the install root: SVC_HOME when the variable is unset, and the oidc.yaml defaults. */
export async function loadIdentitySettings(
  env: NodeJS.ProcessEnv,
  defaultHome: string,
): Promise<IdentitySettings> {
  const home = env['SVC_HOME'] || defaultHome;
  const file = await readOidcFile(home, defaultHome);
  const modeEnv = env['SVC_AUTH_MODE'] || 'builtin';
  if (modeEnv !== 'builtin' && modeEnv !== 'external')
    throw new SettingsError(`SVC_AUTH_MODE: expected builtin or external`);
  const agentPort = port(env['SVC_AGENT_PORT'], 'SVC_AGENT_PORT', DEFAULT_AGENT_PORT);
  const configured = file.OIDC?.web_redirect_uris;
  const uris =
    Array.isArray(configured) && configured.every((u) => typeof u === 'string')
      ? expandRedirectUris(configured, hostname(), agentPort)
      : configured;
  if (
    uris !== undefined &&
    (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string' && URL.canParse(u)))
  )
    throw new SettingsError('config/oidc.yaml: OIDC.web_redirect_uris must be a list of URLs');
  return {
    home,
    workDir: join(home, 'work'),
    mode: modeEnv,
    host: '127.0.0.1',
    issuerPort: port(
      env['SVC_ISSUER_PORT'],
      'SVC_ISSUER_PORT',
      port(file.OIDC?.issuer_port as number | undefined, 'OIDC.issuer_port', 6062),
    ),
    telemetryPort: port(
      env['SVC_AUTH_TELEMETRY_PORT'],
      'SVC_AUTH_TELEMETRY_PORT',
      port(file.OIDC?.telemetry_port as number | undefined, 'OIDC.telemetry_port', 6063),
    ),
    passwordFlow: passwordFlowEnabled(file, env),
    webRedirectUris: (uris as string[] | undefined) ?? defaultWebRedirectUris(agentPort),
    signInThrottle: signInThrottleLimits(file),
  };
}

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import {
  DEFAULT_WEB_REDIRECT_URIS,
  expandRedirectUris,
  loadIdentitySettings,
  readOidcFile,
  SettingsError,
} from './settings.ts';
import { DEFAULT_THROTTLE_LIMITS } from './sign-in-throttle.ts';

let installRoot: string;
let home: string;

async function oidcYaml(root: string, text: string): Promise<void> {
  await mkdir(join(root, 'config'), { recursive: true });
  await writeFile(join(root, 'config', 'oidc.yaml'), text);
}

beforeEach(async () => {
  installRoot = await mkdtemp(join(tmpdir(), 'svc-install-'));
  home = await mkdtemp(join(tmpdir(), 'svc-home-'));
  await oidcYaml(
    installRoot,
    'OIDC:\n  password_flow: false\n  web_redirect_uris:\n    - https://ui.example/callback\n',
  );
});
afterEach(async () => {
  await rm(installRoot, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

describe('config/oidc.yaml: install root defaults, SVC_HOME overrides (CONTRACT §2)', () => {
  it('an empty SVC_HOME takes the install root file', async () => {
    const settings = await loadIdentitySettings({ SVC_HOME: home }, installRoot);
    expect(settings.passwordFlow).toBe(false);
    expect(settings.webRedirectUris).toEqual(['https://ui.example/callback']);
    expect(settings.workDir).toBe(join(home, 'work'));
  });

  it("SVC_HOME's file overrides key by key; the environment still wins", async () => {
    await oidcYaml(home, 'OIDC:\n  password_flow: true\n');
    const settings = await loadIdentitySettings({ SVC_HOME: home }, installRoot);
    expect(settings.passwordFlow).toBe(true);
    expect(settings.webRedirectUris).toEqual(['https://ui.example/callback']);
    const env = { SVC_HOME: home, SVC_AUTH_PASSWORD_FLOW: 'false' };
    expect((await loadIdentitySettings(env, installRoot)).passwordFlow).toBe(false);
  });

  it('SVC_HOME unset or equal to the install root reads the one file once', async () => {
    expect((await readOidcFile(installRoot, installRoot)).OIDC?.password_flow).toBe(false);
    expect((await loadIdentitySettings({}, installRoot)).home).toBe(installRoot);
  });

  it('refuses a malformed or hostile file in either place, naming it', async () => {
    await oidcYaml(home, '- not\n- a mapping\n');
    await expect(readOidcFile(home, installRoot)).rejects.toThrow(SettingsError);
    await oidcYaml(home, 'OIDC:\n  password_flow: "maybe"\n');
    await expect(loadIdentitySettings({ SVC_HOME: home }, installRoot)).rejects.toThrow(
      /OIDC.password_flow must be true or false/,
    );
    await oidcYaml(home, 'OIDC:\n  web_redirect_uris: "javascript:alert(1)"\n');
    await expect(loadIdentitySettings({ SVC_HOME: home }, installRoot)).rejects.toThrow(/web_redirect_uris/);
    await oidcYaml(home, 'OIDC: {password_flow: true\n');
    await expect(readOidcFile(home, installRoot)).rejects.toThrow();
  });
});

describe('svc-web redirect URIs', () => {
  it("register the agent's root by default, on loopback and on this host's name", async () => {
    const settings = await loadIdentitySettings({ SVC_HOME: home }, home);
    const name = hostname().toLowerCase();
    expect(settings.webRedirectUris).toContain('https://127.0.0.1:6060/');
    expect(settings.webRedirectUris).toContain('https://localhost:6060/');
    if (/^[a-z0-9.-]+$/.test(name)) expect(settings.webRedirectUris).toContain(`https://${name}:6060/`);
    expect(settings.webRedirectUris.some((uri) => uri.includes('{'))).toBe(false);
  });

  it("name the agent's real port (SVC_AGENT_PORT), and no longer the administration UI's 6064", async () => {
    const settings = await loadIdentitySettings({ SVC_HOME: home, SVC_AGENT_PORT: '7060' }, home);
    expect(settings.webRedirectUris).toContain('https://127.0.0.1:7060/');
    expect(settings.webRedirectUris).toContain('https://[::1]:7060/');
    expect(settings.webRedirectUris.filter((uri) => uri.includes(':6060'))).toEqual([]);
    expect(settings.webRedirectUris.filter((uri) => uri.includes('6064'))).toEqual([]);
    await expect(loadIdentitySettings({ SVC_HOME: home, SVC_AGENT_PORT: 'x' }, home)).rejects.toThrow(
      /SVC_AGENT_PORT/,
    );
  });

  it('expand {hostname} in the file too, and skip it for a name a URL cannot carry', async () => {
    await oidcYaml(
      home,
      'OIDC:\n  web_redirect_uris:\n    - https://{hostname}:7000/\n    - https://{hostname}:{agent_port}/x\n',
    );
    const settings = await loadIdentitySettings({ SVC_HOME: home }, installRoot);
    expect(settings.webRedirectUris).toEqual(
      /^[a-z0-9.-]+$/.test(hostname().toLowerCase())
        ? [`https://${hostname().toLowerCase()}:7000/`, `https://${hostname().toLowerCase()}:6060/x`]
        : [],
    );
    expect(expandRedirectUris(DEFAULT_WEB_REDIRECT_URIS, 'Box-1.example')).toContain(
      'https://box-1.example:6060/',
    );
    for (const hostile of ['evil.example/x?', 'a@b', 'x y', '', 'é.example', 'a'.repeat(300)])
      expect(expandRedirectUris(['https://{hostname}:6060/'], hostile)).toEqual([]);
  });
});

describe('OIDC.sign_in_throttle', () => {
  it('overrides the password-guessing limits key by key, the defaults elsewhere', async () => {
    expect((await loadIdentitySettings({ SVC_HOME: home }, installRoot)).signInThrottle).toEqual(
      DEFAULT_THROTTLE_LIMITS,
    );
    await oidcYaml(
      home,
      'OIDC:\n  sign_in_throttle:\n    user_address_failures: 3\n    base_delay_ms: 30000\n',
    );
    expect((await loadIdentitySettings({ SVC_HOME: home }, installRoot)).signInThrottle).toEqual({
      ...DEFAULT_THROTTLE_LIMITS,
      userAddressFailures: 3,
      baseDelayMs: 30_000,
    });
  });

  it('refuses unknown keys, non-integers, out-of-range values and delays out of order', async () => {
    for (const [body, message] of [
      ['sign_in_throttle: 5', /must be a mapping/],
      ['sign_in_throttle:\n    lock_ms: 5', /lock_ms is not a setting/],
      ['sign_in_throttle:\n    address_failures: 0', /address_failures must be an integer from 1/],
      ['sign_in_throttle:\n    base_delay_ms: "1000"', /base_delay_ms must be an integer/],
      ['sign_in_throttle:\n    max_entries: 1.5', /max_entries must be an integer/],
      ['sign_in_throttle:\n    max_delay_ms: 10\n    base_delay_ms: 20', /base_delay_ms <= max_delay_ms/],
    ] as const) {
      await oidcYaml(home, `OIDC:\n  ${body}\n`);
      await expect(loadIdentitySettings({ SVC_HOME: home }, installRoot), body).rejects.toThrow(message);
    }
  });
});

// Issue 25 M4: the issuer took the client address from X-Forwarded-For whoever sent it, so 22 failed
// passwords sent straight to the issuer port, each with another invented X-Forwarded-For, met no
// per-address limit (through the agent, which replaces the header, the 21st was refused as meant).
// Must be: forwarded addresses are trusted only from the agent.
//
// A real svcd in builtin mode with svc-identity and svc-agent. Every guess names another unknown
// login, so only the per-address limit (20 failures) can stop them; each scenario sends from its
// own loopback source address (127.0.0.x), so the scenarios do not share an address bucket. The
// first wait is raised to 60 s (OIDC.sign_in_throttle.base_delay_ms) so that no wait ends while the
// test runs on a loaded machine; the thresholds are the defaults.
import { readFile, stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayKeyPath } from '../../src/credentials/index.ts';
import { startAuthStack, type AuthStack } from '../full-stack/stack.ts';
import { passwordGrant, type GrantTarget } from './grant-request.ts';

/** Per-address failures before the issuer refuses the next attempt (DEFAULT_THROTTLE_LIMITS). */
const ADDRESS_FAILURES = 20;

let stack: AuthStack;
let direct: GrantTarget;
let viaAgent: GrantTarget;

beforeAll(async () => {
  stack = await startAuthStack({
    agent: true,
    adminUi: false,
    env: { SVC_AUTH_ADMIN_UI: 'off' },
    files: { 'config/oidc.yaml': 'OIDC:\n  sign_in_throttle:\n    base_delay_ms: 60000\n' },
  });
  const { agentUrl } = await stack.daemon.agent();
  direct = { url: `${stack.issuer}/token` };
  viaAgent = { url: `${agentUrl}/auth/token`, ca: stack.daemon.ca };
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** 22 guesses from `from`, each for a new unknown login and with a new forged X-Forwarded-For. */
async function guesses(
  target: GrantTarget,
  from: string,
  extraHeaders: Record<string, string> = {},
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < ADDRESS_FAILURES + 2; i += 1) {
    const answer = await passwordGrant(
      target,
      { username: `nobody-${from}-${i}@example.org`, password: `guess number ${i}` },
      { from, headers: { 'x-forwarded-for': `198.51.100.${i + 1}`, ...extraHeaders } },
    );
    statuses.push(answer.status);
  }
  return statuses;
}

const refusedFrom = (statuses: number[]): number => statuses.indexOf(429) + 1;

describe('M4: X-Forwarded-For at the issuer', () => {
  it('straight to the issuer port, invented addresses are ignored: the 21st guess is refused', async () => {
    const statuses = await guesses(direct, '127.0.0.21');
    expect(
      statuses.slice(0, ADDRESS_FAILURES).every((s) => s === 401),
      statuses.join(','),
    ).toBe(true);
    expect(refusedFrom(statuses)).toBe(ADDRESS_FAILURES + 1);
    expect(statuses.slice(ADDRESS_FAILURES)).toEqual([429, 429]);
  });

  it('a forged agent key does not make them believed either', async () => {
    const statuses = await guesses(direct, '127.0.0.22', { 'x-svc-agent-key': 'f'.repeat(64) });
    expect(refusedFrom(statuses)).toBe(ADDRESS_FAILURES + 1);
  });

  it('through the agent the address it saw counts (its relay key proves it), one bucket per client', async () => {
    const statuses = await guesses(viaAgent, '127.0.0.23');
    expect(refusedFrom(statuses)).toBe(ADDRESS_FAILURES + 1);
    // Another client of the agent is not in that bucket: the issuer believed the agent's address,
    // not the agent's own connection (127.0.0.1), which every relayed request shares.
    const other = await passwordGrant(
      viaAgent,
      { username: 'nobody-else@example.org', password: 'another guess' },
      { from: '127.0.0.24' },
    );
    expect(other.status).toBe(401);
  });

  it('the relay key is a secret file of svc-identity (mode 0600, 64 hex digits)', async () => {
    const key = (await readFile(relayKeyPath(stack.workDir), 'utf8')).trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(relayKeyPath(stack.workDir))).mode & 0o777).toBe(0o600);
  });
});

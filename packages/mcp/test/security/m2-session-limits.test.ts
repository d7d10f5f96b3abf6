// Issue 25 row M2, the configured caps: REST.Limits.McpMaxSessionsPerPrincipal and McpMaxSessions
// reach the agent's /mcp (a real builtin svcd + svc-agent with small values): a principal at its cap
// gives up its own least recently used session, a full table takes one from the principal holding
// the most. (Idle expiry: m2-session-idle.test.ts, a daemon of its own so that no session here can
// expire between two steps on a slow machine.)
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServedDaemon, type ServeInfo, type TestDaemon } from '@svc/testkit';
import { RawMcp } from './mcp-raw.ts';

let daemon: TestDaemon;
let info: ServeInfo;
let mcp: RawMcp;

const CONFIG = `REST:
  Limits:
    McpMaxSessions: 3
    McpMaxSessionsPerPrincipal: 2
`;

beforeAll(async () => {
  ({ daemon, info } = await startServedDaemon({
    agent: true,
    builtin: true,
    tokenTtlSeconds: 900,
    files: { 'config/config.yaml': CONFIG },
  }));
  mcp = new RawMcp(`${info.agent!}/mcp`, readFileSync(info.ca, 'utf8'));
}, 120_000);

afterAll(async () => {
  await mcp?.close();
  await daemon?.close();
});

async function open(token: string): Promise<string> {
  const answer = await mcp.open(token);
  expect(answer.status).toBe(200);
  return answer.sessionId!;
}

describe('M2: configured MCP session limits', () => {
  it('caps sessions per principal and in all, giving up the largest holder’s least recently used', async () => {
    const admin = info.tokens['svc-admin'];
    const viewer = info.tokens['svc-viewer'];
    const [a1, a2] = [await open(admin), await open(admin)];
    expect(await mcp.alive(admin, a1)).toBe(true); // a1 is now the more recently used
    const a3 = await open(admin); // at its cap of 2: its least recently used (a2) goes
    expect([await mcp.alive(admin, a1), await mcp.alive(admin, a2), await mcp.alive(admin, a3)]).toEqual([
      true,
      false,
      true,
    ]);
    const v1 = await open(viewer); // the table (3) is full now
    // The administrator holds the most: its least recently used session (a1, asked last before a3) goes.
    const m1 = await open(info.tokens['svc-maintenance']);
    expect(await mcp.alive(viewer, v1)).toBe(true);
    expect(await mcp.alive(info.tokens['svc-maintenance'], m1)).toBe(true);
    expect([await mcp.alive(admin, a1), await mcp.alive(admin, a3)]).toEqual([false, true]);
  }, 60_000);
});

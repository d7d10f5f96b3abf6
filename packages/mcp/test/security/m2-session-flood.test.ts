// Issue 25 row M2 against a real builtin svcd + svc-identity + svc-agent, default session limits
// (REST.Limits.McpMaxSessions 256, McpMaxSessionsPerPrincipal 16): 17 role-less principals × 16
// `initialize` got 252 sessions and then everybody, the administrator included, got 503 for 30
// minutes; a tombstoned principal could open sessions. Now a role-less or tombstoned principal gets
// no session at all, and a crowd of principals with roles filling the table cannot lock anybody out.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServedDaemon, waitFor, type BuiltinUser, type ServeInfo, type TestDaemon } from '@svc/testkit';
import { passwordToken, RawMcp } from './mcp-raw.ts';

const CROWD = 17;
const PER_PRINCIPAL = 16;

let daemon: TestDaemon;
let info: ServeInfo;
let mcp: RawMcp;
let roleless: string[];
let viewers: string[];
let auditor: string;
let doomed: { token: string; principal: string };
/** The administrator's sessions opened by these tests. */
const adminSessions: string[] = [];

beforeAll(async () => {
  const started = await startServedDaemon({
    agent: true,
    builtin: true,
    tokenTtlSeconds: 900,
    users: [
      ...Array.from({ length: CROWD }, (_, i) => ({ email: `nobody${i}@m2.test`, roles: [] })),
      ...Array.from({ length: CROWD }, (_, i) => ({ email: `viewer${i}@m2.test`, roles: ['svc-viewer'] })),
      // Given a role below that grants no permission any MCP tool needs (only role-view).
      { email: 'auditor@m2.test', roles: [] },
      { email: 'doomed@m2.test', roles: ['svc-viewer'] },
    ],
  });
  ({ daemon, info } = started);
  mcp = new RawMcp(`${info.agent!}/mcp`, readFileSync(info.ca, 'utf8'));
  const role = await daemon.rest().call('POST', '/svc/role/m2-auditor', {
    token: info.tokens['svc-admin'],
    body: ['role-view'],
  });
  expect(role.status).toBe(200);
  const bound = await daemon.rest().call('POST', `/svc/principal/${started.users[2 * CROWD]!.principal}`, {
    token: info.tokens['svc-admin'],
    body: { roles: ['m2-auditor'] },
  });
  expect(bound.status).toBe(200);
  const tokens = await Promise.all(
    started.users.map((user: BuiltinUser) => passwordToken(info.auth!, mcp.dispatcher, user)),
  );
  roleless = tokens.slice(0, CROWD);
  viewers = tokens.slice(CROWD, 2 * CROWD);
  auditor = tokens[2 * CROWD]!;
  doomed = { token: tokens[2 * CROWD + 1]!, principal: started.users[2 * CROWD + 1]!.principal };
}, 120_000);

afterAll(async () => {
  await mcp?.close();
  await daemon?.close();
});

/** Opens `count` sessions for each token at once, as a flood does: each principal's answers. */
async function flood(tokens: string[], count: number): Promise<{ status: number; sessionId?: string }[][]> {
  return Promise.all(
    tokens.map(async (token) => {
      const answers = [];
      for (let k = 0; k < count; k += 1) {
        const { status, sessionId } = await mcp.open(token);
        answers.push(sessionId === undefined ? { status } : { status, sessionId });
      }
      return answers;
    }),
  );
}

describe('M2: MCP sessions under a flood of principals', () => {
  it('gives role-less principals no session at all (17 × 16 initialize), and the administrator still one', async () => {
    const answers = await flood(roleless, PER_PRINCIPAL);
    const statuses = answers.flat().map((a) => a.status);
    expect(statuses).toHaveLength(CROWD * PER_PRINCIPAL);
    expect(new Set(statuses)).toEqual(new Set([403]));
    const refused = await mcp.open(roleless[0]!);
    expect(refused.message?.error?.message).toMatch(/holds no role granting a permission any MCP tool needs/);
    const admin = await mcp.open(info.tokens['svc-admin']);
    expect(admin.status).toBe(200);
    adminSessions.push(admin.sessionId!);
    expect((await mcp.request(info.tokens['svc-admin'], admin.sessionId!, 'tools/list')).status).toBe(200);
  }, 120_000);

  it('refuses a principal whose roles grant no permission a tool needs (only role-view)', async () => {
    const answer = await mcp.open(auditor);
    expect(answer.status).toBe(403);
    expect(answer.sessionId).toBeUndefined();
  });

  it('refuses a tombstoned principal, on the session it held too', async () => {
    const held = await mcp.open(doomed.token);
    expect(held.status).toBe(200);
    const deleted = await daemon.rest().call('DELETE', `/svc/principal/${doomed.principal}`, {
      token: info.tokens['svc-admin'],
    });
    expect(deleted.status).toBe(200);
    // The agent trusts a verified token for up to 10 s before asking svcd again.
    const refused = await waitFor(
      async () => {
        const answer = await mcp.request(doomed.token, held.sessionId!, 'ping');
        return answer.status === 403 ? answer : undefined;
      },
      { what: 'the tombstoned principal refused', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(refused.message?.error?.message).toMatch(/is tombstoned/);
    expect((await mcp.open(doomed.token)).status).toBe(403);
  }, 60_000);

  it('lets a crowd with roles (17 × 16 initialize) fill the table without locking anybody out', async () => {
    const admin = info.tokens['svc-admin'];
    const before = await mcp.open(admin);
    expect(before.status).toBe(200);
    adminSessions.push(before.sessionId!);
    const answers = await flood(viewers, PER_PRINCIPAL);
    // Every initialize got a session: a full table gives way rather than refusing.
    expect(answers.flat().map((a) => a.status)).toEqual(Array(CROWD * PER_PRINCIPAL).fill(200));
    const during = await mcp.open(admin);
    expect(during.status).toBe(200);
    adminSessions.push(during.sessionId!);
    expect((await mcp.request(admin, during.sessionId!, 'tools/list')).status).toBe(200);
    // The sessions given up were the crowd's: every session of the administrator is still there.
    for (const id of adminSessions) expect(await mcp.alive(admin, id)).toBe(true);
    const held = await Promise.all(
      answers.map(async (own, i) => {
        let count = 0;
        for (const { sessionId } of own) if (await mcp.alive(viewers[i]!, sessionId!)) count += 1;
        return count;
      }),
    );
    for (const count of held) expect(count).toBeLessThanOrEqual(PER_PRINCIPAL);
    // The table is full (256): the crowd holds every session the administrator does not.
    expect(held.reduce((a, b) => a + b, 0)).toBe(256 - adminSessions.length);
    // Given up fairly: no member of the crowd holds two sessions more than another.
    expect(Math.max(...held) - Math.min(...held)).toBeLessThanOrEqual(1);
  }, 120_000);
});

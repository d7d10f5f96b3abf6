import { describe, expect, it } from 'vitest';
import { AGENT_KEY_HEADER } from '@svc/protocol';
import { relayedPeer } from './agent-relay.ts';

const KEY = 'k'.repeat(43);
const check = (key: string): boolean => key === KEY;

describe('relayedPeer', () => {
  it('trusts X-Forwarded-For only with the agent key on a loopback socket, and always removes the key header', () => {
    const headers: Record<string, string | string[] | undefined> = {
      [AGENT_KEY_HEADER]: KEY,
      'x-forwarded-for': '192.0.2.7',
    };
    expect(relayedPeer('127.0.0.1', headers, check)).toEqual({ address: '192.0.2.7', relayedByAgent: true });
    expect(headers[AGENT_KEY_HEADER]).toBeUndefined();
    expect(
      relayedPeer('::ffff:127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': '::1' }, check),
    ).toEqual({
      address: '::1',
      relayedByAgent: true,
    });
  });

  it('ignores malformed, oversized, misplaced and hostile values (never a relay, the socket address stays)', () => {
    const cases: [string, Record<string, string | string[] | undefined>][] = [
      ['127.0.0.1', { [AGENT_KEY_HEADER]: 'wrong', 'x-forwarded-for': '127.0.0.1' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: '', 'x-forwarded-for': '127.0.0.1' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY.repeat(1000), 'x-forwarded-for': '127.0.0.1' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: [KEY, KEY], 'x-forwarded-for': '127.0.0.1' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': '192.0.2.7, 127.0.0.1' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': 'localhost' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': '127.0.0.1\r\nx: y' }],
      ['127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': ['127.0.0.1'] }],
      // The right key from a non-loopback socket: someone else's relay, not ours.
      ['192.0.2.9', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': '127.0.0.1' }],
    ];
    for (const [socket, headers] of cases) {
      expect(relayedPeer(socket, headers, check), JSON.stringify(headers).slice(0, 80)).toEqual({
        address: socket,
        relayedByAgent: false,
      });
      expect(headers[AGENT_KEY_HEADER]).toBeUndefined();
    }
    // No check configured (before the supervisor is up): never a relay.
    expect(
      relayedPeer('127.0.0.1', { [AGENT_KEY_HEADER]: KEY, 'x-forwarded-for': '127.0.0.1' }, undefined),
    ).toEqual({
      address: '127.0.0.1',
      relayedByAgent: false,
    });
  });
});

// Requests svc-agent relays to svcd. The agent proves itself with its own process key in
// X-Svc-Agent-Key, and only on a loopback connection; the agent replaces (never passes on) that
// header and X-Forwarded-For on whatever its clients send. For a proven relay svcd takes the
// client's address from X-Forwarded-For: it counts the connection against that address, and a
// process key is accepted when that address is loopback (a worker on this host reaching the task
// RPC through the agent's port). The header is removed before anything else sees the request.
import { isIP } from 'node:net';
// One header for the agent's proof to either upstream: its process key to svcd, the issuer relay
// key to svc-identity (issue 25 M4).
import { AGENT_KEY_HEADER } from '../../../identity/src/credentials/relay-key.ts';
import { isLoopbackAddress } from '../tasks/worker-auth.ts';

export { AGENT_KEY_HEADER };

/** Checks a presented agent key (the current process key of the system app `agent`). */
export type AgentKeyCheck = (key: string) => boolean;

export interface Peer {
  /** The client's address when relayed, else the socket's. */
  readonly address: string;
  readonly relayedByAgent: boolean;
}

/**
 * The peer of a request or WSS upgrade, from its socket address and headers. Deletes the agent key
 * header from `headers` in every case (a bad or misplaced key is ignored, never echoed).
 */
export function relayedPeer(
  socketAddress: string,
  headers: Record<string, string | string[] | undefined>,
  checkAgentKey: AgentKeyCheck | undefined,
): Peer {
  const key = headers[AGENT_KEY_HEADER];
  delete headers[AGENT_KEY_HEADER];
  const client = headers['x-forwarded-for'];
  if (
    typeof key === 'string' &&
    key !== '' &&
    typeof client === 'string' &&
    isIP(client) !== 0 &&
    isLoopbackAddress(socketAddress) &&
    checkAgentKey?.(key) === true
  )
    return { address: client, relayedByAgent: true };
  return { address: socketAddress, relayedByAgent: false };
}

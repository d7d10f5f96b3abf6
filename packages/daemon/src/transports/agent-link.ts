// svc-agent's own link to svcd (issue 25 H4): a Unix socket in `work/run/` (mode 0600, in a 0700
// directory: only svc's user and root can open it) whose connections go to the REST server like any
// other (TLS, the same handlers) but are never counted by the connection guard nor given its
// deadlines: the agent's pooled connections do not compete with anonymous peers for slots, so a
// flood of svcd's TCP port from loopback cannot turn every request through the agent into a 502.
// Relayed WSS sessions still take a slot for the agent's client (ws-transport.ts).
import { chmod, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { markAgentLink } from './agent-relay.ts';

/** Longest Unix socket path Linux takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

export interface AgentLink {
  readonly path: string;
  close(): Promise<void>;
}

/** Listens on `path` and hands each connection to `server`; undefined when the path is too long. */
export async function listenAgentLink(path: string, server: TlsServer): Promise<AgentLink | undefined> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) return undefined;
  await rm(path, { force: true });
  const link: Server = createServer((socket) => {
    markAgentLink(socket);
    server.emit('connection', socket);
  });
  await new Promise<void>((resolve, reject) => {
    link.once('error', reject);
    link.listen(path, () => {
      link.off('error', reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
  return {
    path,
    async close() {
      await new Promise<void>((resolve) => link.close(() => resolve()));
      await rm(path, { force: true });
    },
  };
}

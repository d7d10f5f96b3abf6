// A TCP proxy between one node and etcd, for partition tests: `cut()` drops every open connection
// and black-holes new ones (accepted, never answered: what a real partition looks like to a
// client), `heal()` forwards again.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** `http://127.0.0.1:<port>`: give it to the node instead of etcd's URL. */
  readonly url: string;
  readonly port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let partitioned = false;
  const track = (socket: Socket): void => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (partitioned) return; // black hole: held open, nothing forwarded
    const upstream = createConnection({ host: targetHost, port: targetPort });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const dropAll = (): void => {
    for (const socket of open) socket.destroy();
    open.clear();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    cut() {
      partitioned = true;
      dropAll();
    },
    heal() {
      partitioned = false;
      dropAll(); // black-holed connections end; clients reconnect through the proxy
    },
    close: () =>
      new Promise<void>((resolve) => {
        dropAll();
        server.close(() => resolve());
      }),
  };
}

// Helpers of the issue 25 security regressions (docs/security.md): raw TLS peers from a chosen
// loopback address, TCP wire calls on such a socket, an HTTPS request from a chosen address, and a
// sampler of svcd's resident memory. Every loop here is bounded.
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { FrameDecoder, decodeResponse, encodeFrame, encodeRequest } from '@svc/protocol';
import { rssKiB } from '../reliability/helpers.ts';

/** A TLS connection from `localAddress` that has finished its handshake (and sends nothing yet). */
export function tlsPeer(port: number, ca: string, localAddress = '127.0.0.1'): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const tcp = netConnect({ port, host: '127.0.0.1', localAddress });
    tcp.on('error', reject);
    const socket = tlsConnect({ socket: tcp, ca, servername: '' }, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Resolves when the socket has closed (at once if it already has). */
export function closed(socket: TLSSocket): Promise<void> {
  return new Promise((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));
}

/** One request on a raw TLS socket to svcd's TCP port; resolves with the response's status. */
export function wireCall(
  socket: TLSSocket,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body: Uint8Array = new Uint8Array(0),
): Promise<number> {
  const uuid = crypto.randomUUID();
  const decoder = new FrameDecoder({ maxBodyBytes: 64 * 1024 * 1024 });
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      for (const body of decoder.push(chunk)) {
        const response = decodeResponse(body);
        if (response.uuid !== uuid) continue;
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve(response.http_status);
      }
    };
    const onClose = (): void => reject(new Error(`connection closed before the answer to ${path}`));
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.write(
      encodeFrame(
        encodeRequest({
          uuid,
          request_uri: path,
          http_method: method,
          client_addr: '',
          headers,
          query: {},
          body,
        }),
      ),
    );
  });
}

/** Writes `bytes` of zeros in 1 MiB pieces, waiting for drain; stops early when the socket closes. */
export async function stream(socket: TLSSocket, bytes: number, progress?: (sent: number) => void): Promise<number> {
  const piece = Buffer.alloc(1024 * 1024);
  let sent = 0;
  while (sent < bytes && !socket.destroyed && socket.writable) {
    const chunk = bytes - sent >= piece.length ? piece : piece.subarray(0, bytes - sent);
    const flushed = socket.write(chunk);
    sent += chunk.length;
    progress?.(sent);
    if (!flushed)
      await new Promise<void>((resolve) => {
        const done = (): void => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.on('drain', done);
        socket.on('close', done);
      });
  }
  return sent;
}

/** An HTTPS request from `localAddress` (a fresh connection); its status, or the error's code. */
export function httpsStatus(
  url: string,
  ca: string,
  options: { path: string; headers?: Record<string, string>; localAddress?: string },
): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      `${url}${options.path}`,
      { ca, agent: false, headers: options.headers ?? {}, localAddress: options.localAddress ?? '127.0.0.1' },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

/** Samples svcd's VmRSS every `intervalMs` until stopped; `stop()` gives the highest, in KiB. */
export function rssSampler(pid: number, intervalMs = 20): { stop(): number } {
  let peak = rssKiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssKiB(pid));
    } catch {
      // the daemon exited: the test fails elsewhere
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssKiB(pid));
    },
  };
}

export const MiB = 1024 * 1024;

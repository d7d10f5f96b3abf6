// The HTTPS server every TLS listener of svc's HTTP side starts from: svcd's REST port and
// svc-agent's front door, with the same TLS floor and bounds.
import { createServer, type Server } from 'node:https';
import type { Limits } from '../config/config.ts';
import type { TlsMaterial } from '../tls/certificates.ts';

/**
 * An HTTPS server with svc's TLS floor and the configured bounds (slow headers, slow bodies, header
 * size, connection count): the daemon's REST port and svc-agent's front door alike.
 */
export function createBoundedHttpsServer(tls: TlsMaterial, limits: Limits): Server {
  const server = createServer({
    key: tls.key,
    cert: tls.cert,
    minVersion: 'TLSv1.2',
    handshakeTimeout: limits.handshakeTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    maxHeaderSize: 32 * 1024,
  });
  server.maxConnections = limits.maxConnections;
  return server;
}

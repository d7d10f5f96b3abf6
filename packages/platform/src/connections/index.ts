// @svc/platform/connections: what every TLS listener does with its connections (svcd's REST, WSS
// and TCP ports, svc-agent's front door): count and cap them, bound handshakes and idle time, and
// the bounded HTTPS server.
export * from './connection-guard.ts';
export * from './connection-deadlines.ts';
export * from './bounded-https-server.ts';

// The transport floor: a bare Node server doing the same I/O as svcd for GET /svc/self — TLS, one
// fixed JSON body — over HTTPS (keep-alive), WSS (sub-protocol svc-ws, msgpack Response per frame)
// and TLS TCP (framed msgpack), with no routing, authentication or authorization.
// argv: <key.pem> <cert.pem> <body.json>; reports {https, tcp} ports over IPC.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { WebSocketServer } from 'ws';
import { FrameDecoder, WS_SUBPROTOCOL, decodeRequest, encodeFrame, encodeResponse } from '@svc/protocol';

const [keyFile, certFile, bodyFile] = process.argv.slice(2) as [string, string, string];
const key = readFileSync(keyFile);
const cert = readFileSync(certFile);
const body = readFileSync(bodyFile);

const server = https.createServer({ key, cert, keepAliveTimeout: 60_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
const wss = new WebSocketServer({
  server,
  perMessageDeflate: false,
  handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
});
const answer = (data: Uint8Array): Buffer => {
  const request = decodeRequest(data);
  return encodeResponse({
    uuid: request.uuid,
    request_uri: request.request_uri,
    http_status: 200,
    body_msg_type: 'application/json',
    headers: {},
    body,
  });
};
wss.on('connection', (ws) => {
  ws.on('message', (data: Buffer) => ws.send(answer(data)));
});
const tcp = tls.createServer({ key, cert }, (socket) => {
  const decoder = new FrameDecoder({ maxBodyBytes: 1024 * 1024 });
  socket.on('data', (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) socket.write(encodeFrame(answer(frame)));
  });
  socket.on('error', () => socket.destroy());
});
server.listen(0, '127.0.0.1', () => {
  tcp.listen(0, '127.0.0.1', () => {
    process.send?.({ https: (server.address() as AddressInfo).port, tcp: (tcp.address() as AddressInfo).port });
  });
});
process.on('disconnect', () => process.exit(0));

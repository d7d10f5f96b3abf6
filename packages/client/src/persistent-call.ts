// One request over a demultiplexed persistent transport (TCP or WSS); the transports differ only in
// how a Request is encoded and written.
import type { Request } from '@svc/protocol';
import { abortErrorOf } from './abort.ts';
import type { Demultiplexer } from './demux.ts';
import { TransportDisconnectedError } from './errors.ts';
import { lowerCaseHeaders, type WireCall, type WireResult } from './transport.ts';

export async function demuxedCall(
  demux: Demultiplexer,
  call: WireCall,
  /** Encode the request for this transport (throws on a size bound before anything is sent). */
  encode: (request: Request) => Uint8Array,
  /** Write the bytes; false when the transport is closed. */
  write: (bytes: Uint8Array) => boolean,
): Promise<WireResult> {
  const request: Request = {
    uuid: crypto.randomUUID(),
    request_uri: call.path,
    http_method: call.method,
    client_addr: '',
    headers: call.headers ?? {},
    query: call.query ?? {},
    body: call.body ?? new Uint8Array(0),
  };
  const bytes = encode(request);
  // Registered before the bytes are written (rule 2, S7).
  const answer = demux.expect(request.uuid);
  const onAbort = (): void => demux.cancel(request.uuid, abortErrorOf(call.signal));
  call.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (call.signal?.aborted === true) onAbort();
    else if (!write(bytes)) demux.cancel(request.uuid, new TransportDisconnectedError('transport is closed'));
    const response = await answer;
    return {
      status: response.http_status,
      headers: lowerCaseHeaders(response.headers),
      contentType: response.body_msg_type,
      body: response.body,
    };
  } finally {
    call.signal?.removeEventListener('abort', onAbort);
  }
}

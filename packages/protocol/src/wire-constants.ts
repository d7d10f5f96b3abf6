// Names on the wire that svcd, svc-agent, svc-identity and the clients must spell alike: defined
// once here. Browser-safe (bundled into the web UI): constants only, no Node import.

/** The header a managed process sends its process key in (worker task RPC; never in a query string). */
export const PROCESS_KEY_HEADER = 'x-svc-process-key';

/** The header svc-agent proves itself in: its process key to svcd, the issuer relay key to svc-identity. */
export const AGENT_KEY_HEADER = 'x-svc-agent-key';

/** The header naming the svcd a request is forwarded to (the X-Target-Host gateway). */
export const TARGET_HOST_HEADER = 'x-target-host';

/** The WebSocket sub-protocol of the WSS API: one msgpack Request or Response per binary message. */
export const WS_SUBPROTOCOL = 'svc-ws';

/** Browsers cannot set Authorization on a WebSocket: they offer `svc-bearer.<token>` beside `svc-ws`. */
export const WS_BEARER_PREFIX = 'svc-bearer.';

/** An application (and other path) name: what `invalid_name` refers to. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

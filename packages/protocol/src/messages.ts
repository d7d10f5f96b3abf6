// Wire messages of the TCP and WSS transports (CONTRACT §4): msgpack maps with exactly these keys.

export interface Request {
  uuid: string;
  request_uri: string;
  http_method: string;
  client_addr: string;
  headers: Record<string, string>;
  query: Record<string, string>;
  body: Uint8Array;
}

export interface Response {
  uuid: string;
  request_uri: string;
  http_status: number;
  body_msg_type: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

export const REQUEST_KEYS = [
  'uuid',
  'request_uri',
  'http_method',
  'client_addr',
  'headers',
  'query',
  'body',
] as const satisfies readonly (keyof Request)[];

export const RESPONSE_KEYS = [
  'uuid',
  'request_uri',
  'http_status',
  'body_msg_type',
  'headers',
  'body',
] as const satisfies readonly (keyof Response)[];

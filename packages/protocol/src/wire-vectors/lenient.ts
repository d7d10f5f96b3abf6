// Valid but not canonical: decoders accept what other encoders write (absent or nil optional keys,
// a str body, unknown keys in any order, map16 headers).
import type { WireVector } from './json.ts';
import { requestToJson, responseToJson } from './json.ts';
import { UUID, getApps, map16Packr, minimalRequest, minimalResponse, packAny } from './kit.ts';

export function lenientVectors(): WireVector[] {
  return [
    {
      name: 'request-optional-keys-absent',
      kind: 'request',
      description: 'Only the required keys; client_addr, headers, query and body default to empty.',
      hex: packAny(minimalRequest).toString('hex'),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'request-optional-keys-nil',
      kind: 'request',
      description: 'Optional keys present as nil are treated as absent.',
      hex: packAny({ ...minimalRequest, client_addr: null, headers: null, query: null, body: null }).toString(
        'hex',
      ),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'request-str-body',
      kind: 'request',
      description: 'A body sent as msgpack str is taken as its UTF-8 bytes.',
      hex: packAny({ ...minimalRequest, http_method: 'POST', body: '{"caf\u00e9":1}' }).toString('hex'),
      decoded: requestToJson({ ...getApps, http_method: 'POST', body: Buffer.from('{"caf\u00e9":1}') }),
      canonical: false,
    },
    {
      name: 'request-unknown-keys-and-order',
      kind: 'request',
      description:
        'Keys in another order plus unknown keys (one of them an integer key) are accepted; unknown keys are ignored.',
      hex: packAny(
        new Map<unknown, unknown>([
          ['http_method', 'GET'],
          ['x_trace', { id: 1 }],
          ['request_uri', '/svc/applications'],
          [7, 'seven'],
          ['uuid', UUID],
        ]),
      ).toString('hex'),
      decoded: requestToJson(getApps),
      canonical: false,
    },
    {
      name: 'response-map16-headers',
      kind: 'response',
      description: 'Maps written with map16 headers even when small (as msgpackr does by default).',
      hex: map16Packr.pack({ ...minimalResponse, headers: { 'X-A': 'b' } }).toString('hex'),
      decoded: responseToJson({
        ...minimalResponse,
        body_msg_type: '',
        headers: { 'X-A': 'b' },
        body: new Uint8Array(0),
      }),
      canonical: false,
    },
  ];
}

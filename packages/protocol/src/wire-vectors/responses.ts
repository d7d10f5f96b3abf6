// Valid responses, canonical encoder output: encoding `decoded` gives exactly `hex`.
import { EVENT_REQUEST_URI } from '../events.ts';
import type { WireVector } from './json.ts';
import { UUID, event, validResponse } from './kit.ts';

export function responseVectors(): WireVector[] {
  return [
    validResponse('response-json-body', '200 with a JSON body.', {
      uuid: UUID,
      request_uri: '/svc/app/web',
      http_status: 200,
      body_msg_type: 'application/json',
      headers: {},
      body: Buffer.from('{"name":"web","status":1}'),
    }),
    validResponse('response-empty-body', '204 with no body and no content type.', {
      uuid: UUID,
      request_uri: '/svc/label/zone',
      http_status: 204,
      body_msg_type: '',
      headers: {},
      body: new Uint8Array(0),
    }),
    validResponse('response-error-body', '404 with the error body of CONTRACT §5.', {
      uuid: UUID,
      request_uri: '/svc/app/nope',
      http_status: 404,
      body_msg_type: 'application/json',
      headers: {},
      body: Buffer.from('{"error":"app_not_found","message":"no application named nope"}'),
    }),
    validResponse('response-output-headers', 'text/plain output with X-Output-Position and X-Exit-Code.', {
      uuid: UUID,
      request_uri: '/svc/app/web/output',
      http_status: 200,
      body_msg_type: 'text/plain',
      headers: { 'X-Output-Position': '12', 'X-Exit-Code': '0' },
      body: Buffer.from('hello world\n'),
    }),
    validResponse('response-binary-body-bin16', 'A 300-byte binary body (msgpack bin 16).', {
      uuid: UUID,
      request_uri: '/svc/app/worker/task',
      http_status: 200,
      body_msg_type: 'application/octet-stream',
      headers: {},
      body: Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256)),
    }),
    validResponse(
      'response-push-event',
      'A server push: request_uri /svc/event, a uuid matching no request, routing headers, the event message as JSON.',
      {
        uuid: '9d8e7f60-5a4b-4c3d-8e2f-1a0b9c8d7e6f',
        request_uri: EVENT_REQUEST_URI,
        http_status: 200,
        body_msg_type: 'application/json',
        headers: {
          'X-Subscription-Id': event.subscription_id,
          'X-Event-Type': event.event_type,
          'X-App-Name': event.app_name,
        },
        body: Buffer.from(JSON.stringify(event)),
      },
    ),
  ];
}

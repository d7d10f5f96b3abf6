// Shared wire test vectors (spec/wire-vectors.json). Every client, in every language, decodes these
// bytes and must reach the same message or the same error category. `npm run gen:spec` writes the
// file from buildWireVectors(); test/spec-sync.test.ts fails when the two drift apart. The vectors
// live in wire-vectors/ by area: requests, responses, lenient (accepted, not canonical), malformed
// messages, frames; kit.ts holds what they share and json.ts the JSON shapes.
//
// Bytes in JSON are lowercase hex: `hex` for the input, `{"$hex": "..."}` for a body inside
// `decoded`, so the file stays lossless.

import type { WireVector } from './wire-vectors/json.ts';
import { frameVectors } from './wire-vectors/frames.ts';
import { lenientVectors } from './wire-vectors/lenient.ts';
import { malformedVectors } from './wire-vectors/malformed.ts';
import { requestVectors } from './wire-vectors/requests.ts';
import { responseVectors } from './wire-vectors/responses.ts';

export {
  fromHexBytes,
  hexBytes,
  requestFromJson,
  requestToJson,
  responseFromJson,
  responseToJson,
  type FrameStreamJson,
  type FrameVector,
  type FrameVectorError,
  type HexBytes,
  type RequestJson,
  type RequestVector,
  type ResponseJson,
  type ResponseVector,
  type WireVector,
} from './wire-vectors/json.ts';

/** Every vector, in the order of spec/wire-vectors.json. */
export function buildWireVectors(): WireVector[] {
  return [
    ...requestVectors(),
    ...responseVectors(),
    ...lenientVectors(),
    ...malformedVectors(),
    ...frameVectors(),
  ];
}

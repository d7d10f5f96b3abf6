// The TCP read path: bytes → frames (1 GiB bound) → Responses → sink. Fatal errors (bad magic,
// frame above the bound, undecodable message) end the connection: the stream position is lost.
import { CLIENT_MAX_BODY_BYTES, FrameDecoder, decodeResponse, type Response } from '@svc/protocol';

export interface FrameReader {
  /** Feed one chunk read from the socket. After a fatal error further chunks are ignored. */
  push(chunk: Buffer): void;
  /** Bytes of an incomplete frame held (non-zero at end of stream = truncated). */
  readonly bufferedBytes: number;
}

export function createFrameReader(
  deliver: (response: Response) => void,
  fail: (error: unknown) => void,
  maxBodyBytes: number = CLIENT_MAX_BODY_BYTES,
): FrameReader {
  const decoder = new FrameDecoder({ maxBodyBytes });
  let dead = false;
  return {
    push(chunk) {
      if (dead) return;
      let bodies: Buffer[];
      let fatal: unknown;
      try {
        bodies = decoder.push(chunk);
      } catch (error) {
        // Complete frames before the bad header are still served, in order, then the failure.
        bodies = (error as { decoded?: Buffer[] }).decoded ?? [];
        fatal = error;
      }
      for (const body of bodies) {
        let response: Response;
        try {
          response = decodeResponse(body);
        } catch (error) {
          dead = true;
          fail(error);
          return;
        }
        deliver(response);
      }
      if (fatal !== undefined) {
        dead = true;
        fail(fatal);
      }
    },
    get bufferedBytes() {
      return decoder.bufferedBytes;
    },
  };
}

// The JSON shapes of spec/wire-vectors.json and the conversions between messages and JSON (bytes as
// lowercase hex, `{"$hex": "..."}`).
import type { MessageErrorReason } from '../codec.ts';
import type { FrameErrorReason } from '../framing.ts';
import type { Request, Response } from '../messages.ts';

export interface HexBytes {
  $hex: string;
}

/** A Request as it appears in JSON: every key present, body as hex. */
export type RequestJson = Omit<Request, 'body'> & { body: HexBytes };
/** A Response as it appears in JSON: every key present, body as hex. */
export type ResponseJson = Omit<Response, 'body'> & { body: HexBytes };

export interface FrameStreamJson {
  /** Bodies the decoder returns, in order, before the stream ends or fails. */
  bodies: HexBytes[];
}

/** `truncated`: no decoder error, but bytes of an incomplete frame remain when the stream ends. */
export type FrameVectorError = FrameErrorReason | 'truncated';

interface VectorBase {
  name: string;
  description: string;
  hex: string;
}

export interface RequestVector extends VectorBase {
  kind: 'request';
  decoded?: RequestJson;
  /** True when encoding `decoded` must give exactly `hex` (the canonical encoder output). */
  canonical?: boolean;
  error?: { category: MessageErrorReason; field?: string };
}

export interface ResponseVector extends VectorBase {
  kind: 'response';
  decoded?: ResponseJson;
  canonical?: boolean;
  error?: { category: MessageErrorReason; field?: string };
}

export interface FrameVector extends VectorBase {
  kind: 'frame';
  /** The decoder's body bound for this vector. */
  max_body_bytes: number;
  decoded: FrameStreamJson;
  error?: { category: FrameVectorError };
}

export type WireVector = RequestVector | ResponseVector | FrameVector;

export function hexBytes(bytes: Uint8Array): HexBytes {
  return { $hex: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') };
}

export function fromHexBytes(value: HexBytes): Buffer {
  return Buffer.from(value.$hex, 'hex');
}

export function requestToJson(request: Request): RequestJson {
  return { ...request, body: hexBytes(request.body) };
}

export function requestFromJson(json: RequestJson): Request {
  return { ...json, body: fromHexBytes(json.body) };
}

export function responseToJson(response: Response): ResponseJson {
  return { ...response, body: hexBytes(response.body) };
}

export function responseFromJson(json: ResponseJson): Response {
  return { ...json, body: fromHexBytes(json.body) };
}

// The body of GET /svc/applications (issue 25 H3): a JSON array (App Mesh 3.0's wire shape) built
// from parts, so that concurrent readers share the bytes of the definitions instead of each making
// its own copy of the whole listing. The definition part of an app (its public view without the
// runtime fields) is serialized once per registered definition and kept with it (a WeakMap on the
// definition object: replaced or removed definitions drop their bytes); each reader adds only its
// small runtime part. The transports send the parts one after the other (REST: a chunked write
// with Content-Length; TCP and WSS: one message written in pieces).
import { toPublicView, type AppDefinition } from '../model/app-definition.ts';
import type { AppView } from '../supervisor/types.ts';
import type { ApiResponse } from './types.ts';

const encoder = new TextEncoder();

interface DefinitionPart {
  /** `{"name":…,…` without its closing brace. */
  readonly bytes: Uint8Array;
  /** The keys it carries (the view's other keys are the runtime part). */
  readonly keys: ReadonlySet<string>;
}

const parts = new WeakMap<AppDefinition, DefinitionPart>();

/** `pid` is a definition field (adopt this process) that the runtime view overwrites. */
const RUNTIME_OVERRIDES = new Set(['pid']);

function definitionPart(def: AppDefinition): DefinitionPart {
  let part = parts.get(def);
  if (part === undefined) {
    const view = toPublicView(def);
    for (const key of RUNTIME_OVERRIDES) delete view[key];
    const text = JSON.stringify(view);
    part = { bytes: encoder.encode(text.slice(0, -1)), keys: new Set(Object.keys(view)) };
    parts.set(def, part);
  }
  return part;
}

/**
 * The listing of `views` as body parts; `definitionOf` gives each view's registered definition (a
 * view without one is serialized whole).
 */
export function listingResponse(
  views: readonly AppView[],
  definitionOf: (name: string) => AppDefinition | undefined,
): ApiResponse {
  const chunks: Uint8Array[] = [encoder.encode('[')];
  views.forEach((view, i) => {
    const def = definitionOf(view.name);
    const prefix = i === 0 ? '' : ',';
    if (def === undefined) {
      chunks.push(encoder.encode(prefix + JSON.stringify(view)));
      return;
    }
    const part = definitionPart(def);
    const runtime: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(view))
      if (!part.keys.has(key) || RUNTIME_OVERRIDES.has(key)) runtime[key] = value;
    const rest = JSON.stringify(runtime);
    if (prefix !== '') chunks.push(encoder.encode(prefix));
    chunks.push(part.bytes);
    chunks.push(encoder.encode(rest === '{}' ? '}' : `,${rest.slice(1)}`));
  });
  chunks.push(encoder.encode(']'));
  return { status: 200, headers: {}, contentType: 'application/json', body: new Uint8Array(0), bodyParts: chunks };
}

/** The whole body of a response (its parts joined): for the few readers that need one buffer. */
export function wholeBody(response: ApiResponse): Uint8Array {
  return response.bodyParts === undefined ? response.body : Buffer.concat(response.bodyParts);
}

/** Bytes of a response's body, parts included. */
export function bodyLength(response: ApiResponse): number {
  return response.bodyParts === undefined
    ? response.body.byteLength
    : response.bodyParts.reduce((sum, part) => sum + part.byteLength, 0);
}

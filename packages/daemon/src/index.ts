// @svc/daemon: the parts of svcd that tests and benchmarks outside this package drive directly (the
// fuzz tests under test/fuzz, bench/, svc-spawner's frame tests). svcd itself runs from bin/svcd.ts
// as a bundle; no package imports svcd's code at run time. `@svc/daemon/spec` builds spec/ and
// docs/reference.md (scripts/spec-files.ts).
export { createOidcTokenVerifier } from './auth/token-verifier.ts';
export { operations } from './api/operations/index.ts';
export { optionalInteger, parseDurationMs } from './api/operations/query.ts';
export { Router } from './api/router.ts';
export { ALL_EVENTS, parseEventList } from './events/event-names.ts';
export { deserializeApp, parseAppDefinition, serializeApp, toPublicView } from './model/app-definition.ts';
export { createSecretCrypter } from './model/secret-crypter.ts';
export { AppStore } from './supervisor/app-store.ts';
export { SpawnerConnection } from './supervisor/spawner/connection.ts';
export { encodeSpawn } from './supervisor/spawner/frames.ts';
export {
  messageSpec,
  SPAWNER_LIMITS,
  type FieldType,
  type FieldValue,
} from './supervisor/spawner/protocol-spec.ts';
export type { DecodedFields, SpawnerVector } from './supervisor/spawner/spawner-vectors.ts';

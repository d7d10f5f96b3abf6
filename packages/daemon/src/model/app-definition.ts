// The application definition (CONTRACT §7): the one wire schema per shape, its validation, the
// internal model, the API view and the file form. The parts live in app-definition/:
//   types.ts       the internal AppDefinition, field names and limits
//   values.ts      the small parsers of values (instants, durations, cron, time of day, permission)
//   fields.ts      the zod schema of each field (JSON Schema type and bounds, svc's messages)
//   schema.ts      the wire schemas: AppDefinition, RunDefinition, and each source's validation
//   migrations.ts  the names before App Mesh 3.0's
//   issues.ts      the invalid_app message
//   parse.ts       parseAppDefinition: validate, then read into the internal model
//   view.ts        the API view (toPublicView)
//   file-form.ts   the YAML file form (serializeApp, deserializeApp)
export * from './app-definition/types.ts';
export {
  formatTimeOfDay,
  parseCron,
  parseDuration,
  parseInstant,
  parseTimeOfDay,
  type Result,
} from './app-definition/values.ts';
export { definitionProblems, formatPath } from './app-definition/issues.ts';
export {
  AppDefinition as AppDefinitionSchema,
  RunDefinition as RunDefinitionSchema,
} from './app-definition/schema.ts';
export {
  cronExpression,
  intervalSeconds,
  othersAccess,
  parseAppDefinition,
  type ParseOptions,
} from './app-definition/parse.ts';
export { toPublicView } from './app-definition/view.ts';
export { deserializeApp, serializeApp, type DeserializeOptions } from './app-definition/file-form.ts';

// The payload (`data`) of every event and the push message around it, as zod schemas: the event
// hub publishes through these types, and `npm run gen:spec` writes them to spec/events/*.schema.json
// for other languages.
import { DISCONNECTED_EVENT, EVENT_TYPES, type EventType } from '@svc/protocol';
import * as z from 'zod';

const processUuid = z.string().meta({ description: 'the process this event is about' });

export const EVENT_DATA_SCHEMAS = {
  START: z.strictObject({ pid: z.number().int(), process_uuid: processUuid }),
  EXIT: z.strictObject({
    pid: z.number().int(),
    exit_code: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'negative = killed by that signal; null = unknown' }),
    last_error: z.string().nullable(),
    process_uuid: processUuid,
  }),
  STDOUT: z.strictObject({
    output: z.string(),
    position: z.number().int().min(0).meta({ description: 'byte offset of the first byte of output' }),
    finished: z.boolean().meta({ description: 'the last chunk of this process' }),
    process_uuid: processUuid,
  }),
  HEALTH: z.strictObject({
    health: z.union([z.literal(0), z.literal(1)]),
    previous_health: z.union([z.literal(0), z.literal(1)]),
  }),
  STATUS: z.strictObject({ enabled: z.boolean(), previous_enabled: z.boolean() }),
  REMOVED: z.strictObject({}),
} as const satisfies Record<EventType, z.ZodType>;

export type EventData = { [T in EventType]: z.output<(typeof EVENT_DATA_SCHEMAS)[T]> };

/** The JSON body of a push (`request_uri` /svc/event). */
export const EVENT_MESSAGE_SCHEMA = z.strictObject({
  subscription_id: z.string(),
  sequence: z.number().int().min(1).meta({ description: 'per subscription, from 1, without gaps' }),
  event_type: z.enum([...(Object.keys(EVENT_TYPES) as EventType[]), DISCONNECTED_EVENT]),
  app_name: z.string().meta({ description: 'the application; "*" never appears here' }),
  timestamp: z.number().int().meta({ description: 'milliseconds since the Unix epoch' }),
  data: z.record(z.string(), z.unknown()).meta({ description: 'see spec/events/<EVENT_TYPE>.schema.json' }),
});

/** spec/events/*.schema.json by file name. */
export function eventSchemaFiles(): Map<string, Record<string, unknown>> {
  const files = new Map<string, Record<string, unknown>>();
  files.set('message.schema.json', {
    title: 'svc event push body',
    ...z.toJSONSchema(EVENT_MESSAGE_SCHEMA),
  });
  for (const [name, schema] of Object.entries(EVENT_DATA_SCHEMAS))
    files.set(`${name}.schema.json`, {
      title: `data of ${name}: ${EVENT_TYPES[name as EventType].meaning}`,
      ...z.toJSONSchema(schema),
    });
  return files;
}

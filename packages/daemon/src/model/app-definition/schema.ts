// The application definition on the wire: ONE zod schema per shape, which is the operations' body
// validator (api/operations), the OpenAPI component (z.toJSONSchema, api/openapi.ts) and, through
// /openapi.json, the web UI's register and edit form. parseAppDefinition (parse.ts) validates with
// the same schemas before it reads the result into the internal model.
//
// A definition is validated in three steps, all inside the schema:
//   1. prepare: null means not set; API input ignores the runtime fields of the app view and the
//      server-set fields; old field names are read as App Mesh 3.0's (migrations.ts);
//   2. the fields (fields.ts), unknown ones refused;
//   3. the rules between fields (only when every field is valid).
// Three sources differ only in which server-set fields they may carry:
//   api      owner / register_time are ignored, system: true is refused
//   stored   (work/apps/*.yaml, written by svc)  owner / register_time are kept
//   bundled  (apps/*.yaml of the install)  owner / register_time / system are kept
import * as z from 'zod';
import {
  appName,
  cronSchedule,
  dependsOn,
  duration,
  environment,
  exitAction,
  exitCodeActions,
  flag,
  instant,
  integer,
  interval,
  metadata,
  permission,
  subObject,
  text,
  timeOfDay,
} from './fields.ts';
import { otherForm, reportKey } from './issues.ts';
import { renameOldFields, type Source } from './migrations.ts';
import { LIMITS, RUNTIME_FIELDS, SERVER_FIELDS } from './types.ts';
import {
  accepted,
  describe,
  environmentBytes,
  exceedsBytes,
  isPlainObject,
  parseDuration,
  parseInstant,
  parseTimeOfDay,
} from './values.ts';

const KIB = 1024;

const FIELDS = {
  name: appName.meta({
    description:
      'unique name; in PUT /svc/app/{name} it may be left out, and equals the path name when given; a run without one is named run-<8 hex>',
  }),
  description: text({ maxBytes: LIMITS.descriptionBytes })
    .optional()
    .meta({ description: `at most ${LIMITS.descriptionBytes / KIB} KiB of UTF-8` }),
  command: text({ maxBytes: LIMITS.commandBytes, nonEmpty: true }).meta({
    description: `command line, at most ${LIMITS.commandBytes / KIB} KiB of UTF-8; line breaks only with shell: true`,
  }),
  shell: flag().optional().meta({ description: 'run through /bin/sh -c (default false)' }),
  session_login: flag()
    .optional()
    .meta({ description: 'run as a login session of the execution user (default false)' }),
  working_dir: text({
    maxBytes: LIMITS.pathBytes,
    nonEmpty: true,
    lineBreaks: false,
    pattern: { regex: /^\//, error: 'must be an absolute path' },
  })
    .optional()
    .meta({ description: 'absolute path' }),
  env: environment()
    .optional()
    .meta({
      description: `variables: at most ${LIMITS.envEntries}, each value at most ${LIMITS.valueBytes / KIB} KiB; env and secret_env together at most ${LIMITS.envTotalBytes / KIB / KIB} MiB as NAME=value`,
    }),
  secret_env: environment().optional().meta({
    description:
      'secret variables: encrypted at rest, shown as ******; sending ****** back keeps the stored value',
  }),
  metadata: metadata()
    .optional()
    .meta({
      description: `written to the process's stdin: a string as is, any other JSON value as JSON (at most ${LIMITS.metadataBytes / KIB / KIB} MiB, ${LIMITS.metadataDepth} levels)`,
    }),
  enabled: flag().optional().meta({ description: 'start it (default true)' }),
  health_check_cmd: text({ maxBytes: LIMITS.commandBytes, nonEmpty: true })
    .optional()
    .meta({ description: 'command whose exit code 0 means healthy' }),
  stdout_backup_count: integer(
    0,
    LIMITS.stdoutBackupCount,
    `must be an integer from 0 to ${LIMITS.stdoutBackupCount}`,
  )
    .optional()
    .meta({ description: 'older output files kept (default 3)' }),
  start_time: instant()
    .optional()
    .meta({ description: 'epoch seconds or ISO 8601 date-time; answers give epoch seconds' }),
  end_time: instant()
    .optional()
    .meta({ description: 'after start_time; epoch seconds or ISO 8601 date-time' }),
  interval: interval().optional().meta({
    description:
      'seconds between starts (at least 1), or an ISO 8601 duration such as PT5M; not with cron_schedule',
  }),
  cron_schedule: cronSchedule()
    .optional()
    .meta({
      description: `a cron expression (5 fields, 6 with seconds first, or @daily and the like), at most ${LIMITS.cronLength} characters; not with interval`,
    }),
  daily_limitation: subObject(
    { daily_start: timeOfDay(), daily_end: timeOfDay() },
    'must be an object with daily_start and daily_end',
  )
    .optional()
    .meta({
      description:
        'the daily window [daily_start, daily_end) of local time, may cross midnight: "HH:MM[:SS]", seconds of the day, or epoch seconds',
    }),
  stop_grace_period: duration()
    .optional()
    .meta({ description: 'whole seconds, or an ISO 8601 duration such as PT5M or P2DT12H' }),
  depends_on: dependsOn()
    .optional()
    .meta({ description: 'applications that must be registered, enabled, running and healthy first' }),
  resource_limit: subObject(
    {
      cpu_shares: integer(1, 262144, 'must be an integer from 1 to 262144').optional(),
      memory_mb: integer(1, 16 * KIB * KIB, 'must be a positive integer (MiB)').optional(),
      memory_virt_mb: integer(1, 16 * KIB * KIB, 'must be a positive integer (MiB)')
        .optional()
        .meta({ description: 'memory plus swap, MiB; at least memory_mb' }),
    },
    'must be an object with cpu_shares, memory_mb and/or memory_virt_mb',
  ).optional(),
  behavior: subObject(
    {
      exit: exitAction()
        .optional()
        .meta({ description: 'after an exit (default restart; standby for a periodic app)' }),
      exit_code_actions: exitCodeActions()
        .optional()
        .meta({ description: 'exit code (-255..255) -> action, checked before exit' }),
    },
    'must be an object with exit and/or exit_code_actions',
  ).optional(),
  permission: permission().optional().meta({
    description: 'two digits; the tens digit is what other principals may do: 1 deny, 2 read, 3 write',
  }),
  pid: integer(1, 2 ** 31 - 1, 'must be a positive integer process id')
    .optional()
    .meta({ description: 'adopt this running process' }),
  docker_image: text({ maxBytes: LIMITS.dockerImageBytes, nonEmpty: true, lineBreaks: false })
    .optional()
    .meta({ description: 'reported unsupported without a container runtime' }),
  owner_principal_id: z
    .string({ error: 'must be a string' })
    .max(LIMITS.principalIdLength)
    .optional()
    .meta({ description: 'server-set: the registering principal' }),
  system: flag().optional().meta({ description: 'server-set: a bundled system application' }),
  register_time: instant().optional().meta({ description: 'server-set' }),
};

/** A definition the schema accepted, as sent (parse.ts reads it into the internal model). */
export type WireDefinition = z.output<z.ZodObject<typeof FIELDS>>;
/** The same where the name may be left out (the path names the application). */
type UnnamedDefinition = Omit<WireDefinition, 'name'> & { name?: string | undefined };

/** Marks the problem of an old field name: it does not keep the rules between fields from running. */
const OLD_NAME = { oldName: true } as const;
/** Marks the problem of a rule between fields (step 3). */
const BETWEEN_FIELDS = { betweenFields: true } as const;

type Marked = { oldName?: true; betweenFields?: true };

const onlyOldNameProblems = (payload: z.core.ParsePayload): boolean =>
  payload.issues.every((issue) => (issue as Marked).oldName === true);

/** Whether every field is valid: a later check may read them (parse.ts resolves masked secrets). */
export const fieldsAreValid = (payload: z.core.ParsePayload): boolean =>
  payload.issues.every(
    (issue) => (issue as Marked).oldName === true || (issue as Marked).betweenFields === true,
  );

/** The input as the field schemas see it (step 1), with the old names found and their problems. */
export function prepareInput(
  input: Record<string, unknown>,
  source: Source,
): ReturnType<typeof renameOldFields> & { body: Record<string, unknown> } {
  // Own keys only (JSON.parse makes "__proto__" an own key; the strict object reports it).
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(input)) {
    const value = input[key];
    if (value === null || value === undefined) continue; // null = not set
    if (source === 'api' && (RUNTIME_FIELDS.includes(key) || SERVER_FIELDS.includes(key))) continue;
    Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return { body, ...renameOldFields(body, source) };
}

function prepare(source: Source) {
  return (input: unknown, context: z.core.$RefinementCtx): unknown => {
    if (!isPlainObject(input)) {
      context.addIssue({
        code: 'custom',
        message: `application definition must be a JSON object, got ${describe(input)}`,
      });
      return input;
    }
    const { body, problems } = prepareInput(input, source);
    if (source !== 'bundled' && body['system'] === true) {
      context.addIssue({
        code: 'custom',
        path: ['system'],
        message: 'only bundled application files (apps/*.yaml) may set system',
      });
      return body;
    }
    for (const { path, key, message } of problems) reportKey(context, key, message, path, OLD_NAME);
    return body;
  };
}

/** Step 3: the rules between fields, in the order their problems are reported. */
function relations(source: Source) {
  return (raw: UnnamedDefinition, context: z.core.$RefinementCtx<UnnamedDefinition>): void => {
    const problem = (path: string[], message: string): void =>
      context.addIssue({ code: 'custom', path, message, ...BETWEEN_FIELDS });
    if (raw.shell !== true && /[\r\n]/.test(raw.command))
      problem(['command'], 'must not contain line breaks unless shell is true');
    if (raw.interval !== undefined && raw.cron_schedule !== undefined)
      problem(['interval'], 'give either interval or cron_schedule, not both');
    if (raw.interval !== undefined && accepted(parseDuration(raw.interval)) < 1)
      problem(['interval'], 'must be at least 1 second');
    if (
      raw.start_time !== undefined &&
      raw.end_time !== undefined &&
      accepted(parseInstant(raw.end_time)) <= accepted(parseInstant(raw.start_time))
    )
      problem(['end_time'], 'must be after start_time');
    const daily = raw.daily_limitation;
    if (
      daily !== undefined &&
      accepted(parseTimeOfDay(daily.daily_start)) === accepted(parseTimeOfDay(daily.daily_end))
    )
      problem(['daily_limitation'], 'daily_start and daily_end must differ');
    const limit = raw.resource_limit;
    if (
      limit?.memory_virt_mb !== undefined &&
      limit.memory_mb !== undefined &&
      limit.memory_virt_mb < limit.memory_mb
    )
      problem(['resource_limit', 'memory_virt_mb'], 'must be at least memory_mb');
    if (raw.name !== undefined && raw.depends_on?.includes(raw.name) === true)
      problem(['depends_on'], `an application cannot depend on itself (${raw.name})`);
    // Totals of API input only: a file stored before these caps still loads (its next PUT must fit).
    if (source !== 'api') return;
    const envBytes = environmentBytes(raw.env) + environmentBytes(raw.secret_env);
    if (envBytes > LIMITS.envTotalBytes)
      problem(
        ['env'],
        `env and secret_env together must be at most ${LIMITS.envTotalBytes} bytes as the process receives them (NAME=value), got ${envBytes}`,
      );
    else if (exceedsBytes(JSON.stringify(raw), LIMITS.definitionBytes))
      context.addIssue({
        code: 'custom',
        message: `(definition): must be at most ${LIMITS.definitionBytes} bytes as JSON`,
        ...BETWEEN_FIELDS,
      });
  };
}

const strict = {
  error: (issue: z.core.$ZodRawIssue) => (issue.code === 'unrecognized_keys' ? 'unknown field' : undefined),
};
const named = z.strictObject(FIELDS, strict);
/** The fields where the name may be left out (the path names the application). */
const unnamed = z.strictObject({ ...FIELDS, name: FIELDS.name.optional() }, strict);

/** Step 3 of a source, run only when every field is valid. */
const rules = (source: Source) => z.superRefine(relations(source), { when: onlyOldNameProblems });

/** Validation of each source for parseAppDefinition and the file form (the name is required). */
export const definitionSchemas = {
  api: z.preprocess(prepare('api'), named.check(rules('api'))),
  stored: z.preprocess(prepare('stored'), named.check(rules('stored'))),
  bundled: z.preprocess(prepare('bundled'), named.check(rules('bundled'))),
};

/**
 * An application definition as the API takes it: PUT /svc/app/{name} (the path names it), a new
 * command run by POST /svc/app/run and /svc/app/syncrun.
 */
export const AppDefinition = z.preprocess(prepare('api'), unnamed.check(rules('api'))).meta({
  id: 'AppDefinition',
  description:
    "An application definition (App Mesh 3.0 field names). Any other field is refused (400 invalid_app), except the app view's runtime fields, which are ignored, and the names before App Mesh 3.0 (status, sec_env, stdout_cache_num, start_interval_seconds with cron, retention, owner, behavior.control), which are read as their new names. null means not set.",
});

/** The keys of a run of a copy; a body with only these and no `command` is one. */
const COPY_KEYS: readonly string[] = ['name', 'metadata', 'env'];

const isCopy = (input: unknown): boolean =>
  isPlainObject(input) && !('command' in input) && Object.keys(input).every((key) => COPY_KEYS.includes(key));

/** A union branch for one form of the run body: it refuses the other form without a word of its own. */
const ofForm = (copy: boolean) => (input: unknown, context: z.core.$RefinementCtx) => {
  if (isCopy(input) !== copy) context.issues.push(otherForm(copy ? 'not a copy' : 'a copy'));
  return input;
};

/** POST /svc/app/run and /svc/app/syncrun: a new command, or a copy of a registered application. */
export const RunDefinition = z
  .union([
    z.preprocess(ofForm(false), AppDefinition),
    z.preprocess(
      ofForm(true),
      z
        .strictObject(
          {
            name: appName.meta({ description: 'the registered application to run a copy of' }),
            env: environment()
              .nullable()
              .optional()
              .meta({ description: "merged over the application's env (null: no env)" }),
            metadata: metadata()
              .optional()
              .meta({ description: "replaces the application's metadata (null: none)" }),
          },
          strict,
        )
        .meta({
          title: 'RunCopy',
          description:
            'a copy of a registered application (its command, shell, working_dir, resource_limit, health_check_cmd, secret_env), run once',
        }),
    ),
  ])
  .meta({
    id: 'RunDefinition',
    description:
      'an AppDefinition with `command` (the run is named <name or "run">-run-<8 hex>), or {"name": "<app>"} with env and/or metadata to run a copy of a registered application',
  });

// Wire shapes of request and response bodies, as zod schemas: the operations' declared schemas
// (api/types.ts), which validate what they take, and, exported with z.toJSONSchema, the components of
// spec/openapi.json. One schema per shape: the application definition and the run body are the
// model's own (model/app-definition/schema.ts), which parseAppDefinition validates with too.
import { ERROR_CODES, NAME_PATTERN, PERMISSIONS, type Permission } from '@svc/protocol';
import * as z from 'zod';
import { EXECUTION_USER_PATTERN } from '../auth/policy-store.ts';
import { configSchema, configUpdateSchema } from '@svc/platform/config';
import {
  AppDefinitionSchema,
  LIMITS,
  RunDefinitionSchema,
  definitionProblems,
} from '../model/app-definition.ts';
import { APP_VIEW_FIELDS } from '../model/app-definition/view.ts';
import { ClusterTaskSchema, HostTopologySchema, NodeReportSchema } from '../cluster/records.ts';
import type { BodySpec } from './types.ts';

const NAME = NAME_PATTERN.source;

/** PUT /svc/app/{name}: an application definition (the path names it). */
export const AppDefinition = AppDefinitionSchema;

/** POST /svc/app/run and /svc/app/syncrun: a new command, or a copy of a registered application. */
export const RunDefinition = RunDefinitionSchema;

/** The body of an operation that takes a definition: refused as invalid_app with the model's messages. */
export function definitionBody<T extends z.ZodType>(schema: T) {
  return {
    kind: 'json',
    schema,
    errorCode: 'invalid_app',
    describeIssues: definitionProblems,
    maxBytes: LIMITS.definitionBodyBytes,
  } as const satisfies BodySpec;
}

/** An application as GET returns it: the definition plus runtime fields. */
export const AppView = z
  .looseObject({
    ...APP_VIEW_FIELDS,
    state: z.string().optional(),
    pid_user: z.string().optional(),
    process_uuid: z.string().optional(),
    return_code: z.number().int().nullable().optional(),
    health: z.union([z.literal(0), z.literal(1)]).optional(),
    memory: z.number().optional(),
    cpu: z.number().optional(),
    fd: z.number().int().optional(),
    pstree: z.string().optional(),
    processes: z.number().int().optional(),
    starts: z.number().int().optional(),
    last_start_time: z.number().int().optional().meta({ description: 'epoch seconds' }),
    last_exit_time: z.number().int().optional().meta({ description: 'epoch seconds' }),
    next_start_time: z.number().int().optional().meta({ description: 'epoch seconds' }),
    last_error: z.string().optional(),
    waiting_for: z.unknown().optional().meta({ description: 'the unmet depends_on' }),
    stdout_file_count: z.number().int().optional(),
    stdout_cache_size: z.number().int().optional(),
    owner_display_name: z.string().optional(),
    task_id: z
      .number()
      .int()
      .optional()
      .meta({ description: 'the oldest outstanding task of the worker task loop (1, 2, … per app)' }),
    task_status: z
      .enum(['queued', 'fetched'])
      .optional()
      .meta({ description: 'queued: waiting for the worker; fetched: taken, no result yet' }),
    container_id: z.string().optional(),
    adopted: z.boolean().optional(),
    output_captured: z.boolean().optional(),
    transient: z.boolean().optional(),
    cluster: z.boolean().optional().meta({
      description: 'a cluster application placed on this node (change it through /svc/cluster/app/{name})',
    }),
    cluster_conflict: z.string().optional().meta({
      description: 'a cluster task of this name is placed on this node but this local app keeps the name',
    }),
    resource_limit_status: z.string().optional(),
  })
  .meta({ id: 'AppView' });

export const AppList = z.array(AppView);

/** The atomic register-and-subscribe answer adds the subscription id. */
export const AppViewSubscribed = AppView.extend({ subscription_id: z.string().optional() });

export const AppRemoved = z.object({ name: z.string(), removed: z.literal(true) });

// ---- cluster (spec: "Cluster registry records"; spec/contract.md §9) ---------------------------

const clusterTaskFields = ClusterTaskSchema.extend({
  content: z.record(z.string(), z.unknown()).meta({
    description:
      'the application definition each replica runs (an AppDefinition; the owner is added by the server); its name, if given, equals the path name',
  }),
});

/** Labels a node selector may name. */
const MAX_CONDITIONS = 64;

/** PUT /svc/cluster/app/{name} body: a cluster task (its `content` is validated as a definition). */
export const ClusterTask = clusterTaskFields
  .strict()
  .superRefine((task, context) => {
    const entries = Object.entries(task.condition);
    if (entries.length > MAX_CONDITIONS)
      context.addIssue({ code: 'custom', path: ['condition'], message: `at most ${MAX_CONDITIONS} entries` });
    for (const [key, value] of entries)
      if (key.length === 0 || key.length > 128 || value.length > 256)
        context.addIssue({
          code: 'custom',
          path: ['condition'],
          message: 'label names are 1-128 characters, values at most 256',
        });
  })
  .meta({ id: 'ClusterTask' });
/** A task as the API shows it: the stored task plus where it runs now. */
export const ClusterTaskView = clusterTaskFields
  .extend({
    placements: z
      .array(z.object({ host: z.string(), schedule_time: z.string() }))
      .meta({ description: 'the hosts whose topology names the task, with the time of the placement' }),
  })
  .meta({ id: 'ClusterTaskView' });
export const ClusterTaskMap = z.record(z.string(), ClusterTaskView).meta({ id: 'ClusterTaskMap' });
export const ClusterNodeMap = z
  .record(z.string(), NodeReportSchema)
  .meta({ id: 'ClusterNodeMap', description: 'node reports by host name' });
export const ClusterTopology = z.record(z.string(), HostTopologySchema).meta({
  id: 'ClusterTopology',
  description: 'host name -> the entries [{app, schedule_time}] placed there',
});

export const RunStarted = z.object({ name: z.string(), process_uuid: z.string() }).meta({ id: 'RunStarted' });

const permissionEnum = z.enum(PERMISSIONS as unknown as [Permission, ...Permission[]], {
  error: 'not a permission (GET /svc/permissions lists them)',
});

export const Self = z
  .object({
    principal_id: z.string(),
    roles: z.array(z.string()),
    permissions: z.array(permissionEnum),
    status: z.enum(['active', 'tombstoned']),
    execution_user: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'OS user its apps and runs execute as' }),
    expires_at: z.number().optional(),
  })
  .meta({ id: 'Self' });

export const Principal = z
  .object({
    principal_id: z.string(),
    roles: z.array(z.string()),
    status: z.enum(['active', 'tombstoned']),
    execution_user: z.string().optional(),
  })
  .meta({ id: 'Principal' });

/** GET /svc/principals: an object keyed by principal id. */
export const PrincipalList = z.record(z.string(), Principal);

export const PrincipalAnswer = z.object({
  principal_id: z.string(),
  id: z.string(),
  roles: z.array(z.string()),
  status: z.enum(['active', 'tombstoned']),
});

export const RoleMap = z.record(z.string(), z.array(permissionEnum)).meta({ id: 'Roles' });

export const PermissionList = z.array(permissionEnum);

/** POST /svc/role/{role}: a list of permissions, bare or wrapped. */
export const RolePermissions = z.union([
  z.array(permissionEnum).max(PERMISSIONS.length * 2),
  z.object({ permissions: z.array(permissionEnum).max(PERMISSIONS.length * 2) }),
]);

/** POST /svc/principal/{id}: roles and/or execution_user (null or "" removes it). */
export const PrincipalChange = z
  .object({
    roles: z
      .array(z.string().regex(new RegExp(NAME)))
      .max(64)
      .optional(),
    execution_user: z
      .union([z.string().regex(EXECUTION_USER_PATTERN), z.literal(''), z.null()])
      .optional()
      .meta({ description: 'an OS user of this host; null or "" removes it' }),
  })
  .refine((v) => v.roles !== undefined || v.execution_user !== undefined, {
    error: 'body must set "roles" and/or "execution_user"',
  })
  .meta({ id: 'PrincipalChange' });

export const Labels = z.record(z.string(), z.string()).meta({ id: 'Labels' });

/**
 * GET /svc/config: App Mesh's sectioned configuration (spec/contract.md §3), key by key: the same
 * schema the config store validates files and POST bodies with (config/config-schema.ts).
 */
export const Config = configSchema
  .required({ BaseConfig: true, REST: true, Registry: true, Labels: true })
  .meta({ id: 'Config' });

/** POST /svc/config answer: the whole configuration and the accepted keys that need a restart. */
export const ConfigUpdated = Config.extend({
  restart_required: z.array(z.string()).meta({ description: 'accepted keys that apply at the next start' }),
});

/** POST /svc/config: a partial sectioned document, validated as the config store does. */
export const ConfigUpdate = configUpdateSchema.meta({
  id: 'ConfigUpdate',
  description: 'a partial sectioned configuration, for example {"BaseConfig": {"LogLevel": "DEBUG"}}',
});

export const Resources = z
  .object({
    host_name: z.string(),
    cpu_cores: z.number().int(),
    cpu_model: z.string(),
    mem_total_bytes: z.number(),
    mem_free_bytes: z.number(),
    load_average: z.array(z.number()),
    uptime_seconds: z.number(),
    disks: z.array(z.object({ path: z.string(), total_bytes: z.number(), free_bytes: z.number() })),
    process_spawner: z
      .object({
        kind: z.enum(['native', 'inprocess']),
        pid: z.number().int().optional(),
        reason: z.string().optional(),
      })
      .optional()
      .meta({
        description:
          'how svcd spawns managed processes: native (svc-spawner, its pid) or inprocess (with the reason: SVC_SPAWNER=inprocess, or why the spawner is unavailable)',
      }),
  })
  .meta({ id: 'Resources' });

export const Subscribed = z
  .object({ subscription_id: z.string(), app_name: z.string(), events: z.array(z.string()) })
  .meta({ id: 'Subscription' });

export const Unsubscribed = z.object({
  subscription_id: z.string(),
  app_name: z.string(),
  removed: z.literal(true),
});

export const TasksCancelled = z.object({
  app_name: z.string(),
  cancelled: z.array(z.string()).meta({ description: 'ids of the tasks cancelled' }),
});

export const TaskDelivered = z.object({
  app_name: z.string(),
  task_id: z.string(),
  delivered: z.literal(true),
});

export const AnyObject = z.record(z.string(), z.unknown());

/** Every error body. */
export const ErrorBody = z
  .object({
    error: z.enum(Object.keys(ERROR_CODES) as [string, ...string[]]),
    message: z.string(),
  })
  .meta({ id: 'Error' });

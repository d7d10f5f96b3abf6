// The definition as the API returns it (toPublicView, documented by APP_VIEW_FIELDS) and as the
// file form writes it.
import * as z from 'zod';
import { EXIT_ACTIONS, SECRET_MASK, type AppDefinition } from './types.ts';
import { parseTimeOfDay } from './values.ts';

const epochSeconds = () => z.number().int().meta({ description: 'epoch seconds' });

/**
 * The fields of toPublicView's answer (the app view adds the runtime fields, api/schemas.ts AppView):
 * App Mesh 3.0's names and the types its SDKs read. A test checks toPublicView against it.
 */
export const APP_VIEW_FIELDS = {
  name: z.string(),
  description: z.string().optional(),
  command: z.string(),
  shell: z.boolean(),
  session_login: z.boolean(),
  working_dir: z.string().optional(),
  env: z.record(z.string(), z.string()),
  secret_env: z.record(z.string(), z.literal(SECRET_MASK)).meta({
    description: `every value shown as ${SECRET_MASK}; sending it back keeps the stored value`,
  }),
  metadata: z.unknown().optional().meta({ description: "written to the process's stdin" }),
  enabled: z.boolean(),
  health_check_cmd: z.string().optional(),
  stdout_backup_count: z.number().int(),
  start_time: epochSeconds().optional(),
  end_time: epochSeconds().optional(),
  interval: z.number().int().optional().meta({ description: 'seconds between starts' }),
  cron_schedule: z.string().optional(),
  daily_limitation: z
    .object({ daily_start: z.number().int(), daily_end: z.number().int() })
    .optional()
    .meta({ description: 'the daily window in seconds of the local day' }),
  stop_grace_period: z
    .string()
    .optional()
    .meta({ description: 'as it was given: whole seconds or an ISO 8601 duration' }),
  depends_on: z.array(z.string()).optional(),
  resource_limit: z
    .object({
      cpu_shares: z.number().int().optional(),
      memory_mb: z.number().int().optional(),
      memory_virt_mb: z.number().int().optional(),
    })
    .optional(),
  behavior: z.object({
    exit: z.enum(EXIT_ACTIONS),
    exit_code_actions: z.record(z.string(), z.enum(EXIT_ACTIONS)),
  }),
  permission: z.number().int().optional(),
  pid: z.number().int().optional().meta({ description: 'the process (adopted, or the current one)' }),
  docker_image: z.string().optional(),
  owner_principal_id: z.string().optional().meta({ description: 'the registering principal' }),
  system: z.boolean().meta({ description: 'a bundled system application' }),
  register_time: epochSeconds(),
};

/**
 * The definition as the API returns it (App Mesh 3.0 names): secret_env values masked, instants
 * as epoch seconds, daily_limitation as seconds of the local day, interval in seconds,
 * stop_grace_period as the text it was given (the 3.0 SDKs read it as a string). Runtime fields are
 * added by the supervisor.
 */
export function toPublicView(def: AppDefinition): Record<string, unknown> {
  const view: Record<string, unknown> = { ...plainFields(def, 'api') };
  view['secret_env'] = Object.fromEntries(Object.keys(def.secret_env).map((key) => [key, SECRET_MASK]));
  return view;
}

/**
 * Every field but secret_env, in a stable order, JSON-ready. The file form keeps instants as
 * ISO 8601 and daily windows as "HH:MM:SS", which an operator reads more easily.
 */
export function plainFields(def: AppDefinition, form: 'api' | 'file'): Record<string, unknown> {
  const instant = (ms: number): string | number =>
    form === 'file' ? new Date(ms).toISOString() : Math.floor(ms / 1000);
  const timeOfDay = (text: string): string | number => {
    if (form === 'file') return text;
    const parsed = parseTimeOfDay(text);
    return parsed.ok ? parsed.value : text;
  };
  const out: Record<string, unknown> = { name: def.name };
  if (def.description !== undefined) out['description'] = def.description;
  out['command'] = def.command;
  out['shell'] = def.shell;
  out['session_login'] = def.session_login;
  if (def.working_dir !== undefined) out['working_dir'] = def.working_dir;
  out['env'] = { ...def.env };
  if (def.metadata !== undefined) out['metadata'] = def.metadata;
  out['enabled'] = def.enabled;
  if (def.health_check_cmd !== undefined) out['health_check_cmd'] = def.health_check_cmd;
  out['stdout_backup_count'] = def.stdout_backup_count;
  if (def.start_time !== undefined) out['start_time'] = instant(def.start_time);
  if (def.end_time !== undefined) out['end_time'] = instant(def.end_time);
  if (def.interval !== undefined) out['interval'] = def.interval;
  if (def.cron_schedule !== undefined) out['cron_schedule'] = def.cron_schedule;
  if (def.daily_limitation !== undefined) {
    out['daily_limitation'] = {
      daily_start: timeOfDay(def.daily_limitation.daily_start),
      daily_end: timeOfDay(def.daily_limitation.daily_end),
    };
  }
  if (def.stop_grace_period !== undefined) out['stop_grace_period'] = def.stop_grace_period.text;
  if (def.depends_on.length > 0) out['depends_on'] = [...def.depends_on];
  if (def.resource_limit !== undefined) out['resource_limit'] = { ...def.resource_limit };
  out['behavior'] = { exit: def.behavior.exit, exit_code_actions: { ...def.behavior.exit_code_actions } };
  if (def.permission !== undefined) out['permission'] = def.permission;
  if (def.pid !== undefined) out['pid'] = def.pid;
  if (def.docker_image !== undefined) out['docker_image'] = def.docker_image;
  if (def.owner_principal_id !== undefined) out['owner_principal_id'] = def.owner_principal_id;
  out['system'] = def.system;
  out['register_time'] = instant(def.register_time);
  return out;
}

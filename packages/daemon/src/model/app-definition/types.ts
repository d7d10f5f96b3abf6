// The application definition (CONTRACT §7) as svc holds it in memory, and the names and limits of
// its fields. Field names are App Mesh 3.0's (docs/decisions.md "Application definition").

export const EXIT_ACTIONS = ['standby', 'restart', 'keepalive', 'remove'] as const;
/**
 * What happens when a process exits on its own (never after a deliberate stop):
 *   standby    stay stopped (a periodic app waits for its next scheduled start)
 *   restart    start again after a failed exit (code != 0, including signals); exit 0 = standby
 *   keepalive  start again after any exit, including 0
 *   remove     remove the application (REMOVED event, file deleted)
 * In `behavior.exit_code_actions` an action names exactly what happens for that code: `restart` and
 * `keepalive` both mean start again.
 */
export type ExitAction = (typeof EXIT_ACTIONS)[number];

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface DailyLimitation {
  /** Local time of day "HH:MM:SS"; the window is [daily_start, daily_end) and may cross midnight. */
  daily_start: string;
  daily_end: string;
}

export interface ResourceLimit {
  cpu_shares?: number;
  memory_mb?: number;
  /** Memory plus swap, MiB; at least memory_mb. */
  memory_virt_mb?: number;
}

export interface AppBehavior {
  exit: ExitAction;
  /** Keys are canonical decimal exit codes ("1", "-9"); checked before `exit`. */
  exit_code_actions: Record<string, ExitAction>;
}

/** Field names are App Mesh 3.0's (docs/decisions.md "Application definition"). */
export interface AppDefinition {
  name: string;
  description?: string;
  command: string;
  /** Run through `/bin/sh -c`; multi-line commands are allowed only then. */
  shell: boolean;
  /** Run as a login session (`/bin/sh -l`) of the execution user. */
  session_login: boolean;
  /** Absolute path. */
  working_dir?: string;
  env: Record<string, string>;
  /** Plaintext in memory; encrypted at rest; never returned by the API. */
  secret_env: Record<string, string>;
  /** Written to the process's stdin: a string as is, any other JSON value as JSON text. */
  metadata?: JsonValue;
  enabled: boolean;
  health_check_cmd?: string;
  /** Number of previous output files kept, 0..100. */
  stdout_backup_count: number;
  /** Epoch ms. */
  start_time?: number;
  /** Epoch ms, > start_time. */
  end_time?: number;
  /** Seconds between starts (periodic app). Exclusive with cron_schedule. */
  interval?: number;
  /** Cron expression (cron-scheduled app). Exclusive with interval. */
  cron_schedule?: string;
  daily_limitation?: DailyLimitation;
  /**
   * Time between SIGTERM and SIGKILL when the app is stopped (default: the daemon's): seconds, and
   * the text the client sent (`"PT3S"`, `"30"`), which is what the API returns (App Mesh 3.0).
   */
  stop_grace_period?: { seconds: number; text: string };
  /** Apps that must be registered, enabled, running and healthy before this one starts. */
  depends_on: string[];
  resource_limit?: ResourceLimit;
  behavior: AppBehavior;
  /** Two digits; the tens digit is what other principals may do: 1 deny, 2 read, 3 write. */
  permission?: number;
  /** Adopt this running process instead of spawning. */
  pid?: number;
  /** Accepted and stored; the app does not start unless a container runtime is configured. */
  docker_image?: string;
  /** Principal id of the registering caller; set by the server. */
  owner_principal_id?: string;
  /** Bundled system application (apps/*.yaml only). */
  system: boolean;
  /** Epoch ms; set by the server. */
  register_time: number;
}

// ---------------------------------------------------------------------------------------------
// Names and limits

export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const LIMITS = {
  commandBytes: 64 * 1024,
  valueBytes: 64 * 1024,
  envEntries: 1000,
  /**
   * env and secret_env together, as the process receives them (`NAME=value` plus a NUL each): the
   * kernel takes at most ~2 MiB of arguments and environment at exec, svc's own variables included.
   */
  envTotalBytes: 1024 * 1024,
  /** The whole definition as JSON (secret values included): what one application may hold in memory. */
  definitionBytes: 2 * 1024 * 1024,
  /** The largest JSON body that carries one definition (twice the above, for whitespace and escapes). */
  definitionBodyBytes: 4 * 1024 * 1024,
  metadataBytes: 1024 * 1024,
  metadataDepth: 64,
  descriptionBytes: 64 * 1024,
  pathBytes: 4096,
  principalIdLength: 256,
  dependsOnEntries: 64,
  dockerImageBytes: 1024,
  cronLength: 256,
  stdoutBackupCount: 100,
  exitCode: 255,
  /** Durations are capped at ~68 years. */
  durationSeconds: 2 ** 31 - 1,
} as const;

/** Value shown in place of each secret_env value; sending it back on replace keeps the stored value. */
export const SECRET_MASK = '******';

/**
 * Fields of the API's app view (App Mesh 3.0 runtime fields and svc's own) that clients may echo
 * back on PUT; they are ignored.
 */
export const RUNTIME_FIELDS: readonly string[] = [
  'process_uuid',
  'pid_user',
  'return_code',
  'health',
  'memory',
  'cpu',
  'fd',
  'pstree',
  'starts',
  'last_start_time',
  'last_exit_time',
  'next_start_time',
  'last_error',
  'waiting_for',
  'stdout_file_count',
  'owner_display_name',
  'task_id',
  'task_status',
  'subscription_id',
  'container_id',
  'processes',
  'adopted',
  'output_captured',
  'resource_limit_status',
  'transient',
  'state',
  'stdout_cache_size',
];

/** Fields only the server sets: ignored in API input, kept in stored and bundled files. */
export const SERVER_FIELDS: readonly string[] = ['owner_principal_id', 'owner', 'register_time'];

/**
 * Names of the definition before App Mesh 3.0's were adopted, accepted on input (and in stored
 * files, which are rewritten at start) as aliases; output never uses them.
 */
export const LEGACY_FIELDS: Readonly<Record<string, string>> = {
  status: 'enabled',
  sec_env: 'secret_env',
  stdout_cache_num: 'stdout_backup_count',
  start_interval_seconds: 'interval or cron_schedule',
  cron: 'cron_schedule',
  retention: 'stop_grace_period',
  owner: 'owner_principal_id',
};

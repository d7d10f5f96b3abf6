// Event names as data (spec "Events"). spec/events.json is generated from this table.

export const EVENT_TYPES = {
  START: { meaning: 'process spawned', data: ['pid', 'process_uuid'] },
  EXIT: { meaning: 'process exited', data: ['pid', 'exit_code', 'last_error', 'process_uuid'] },
  STDOUT: { meaning: 'stdout output available', data: ['output', 'position', 'finished', 'process_uuid'] },
  HEALTH: { meaning: 'health changed', data: ['health', 'previous_health'] },
  STATUS: { meaning: 'app enabled or disabled', data: ['enabled', 'previous_enabled'] },
  REMOVED: { meaning: 'app deleted', data: [] },
} as const satisfies Record<string, { meaning: string; data: readonly string[] }>;

export type EventType = keyof typeof EVENT_TYPES;

/** Synthetic event type sent when a forwarded route or the local transport fails. */
export const DISCONNECTED_EVENT = '__disconnected__';

/** request_uri of a server push; clients route a push by this alone. */
export const EVENT_REQUEST_URI = '/svc/event';

export interface EventMessage {
  subscription_id: string;
  event_type: EventType | typeof DISCONNECTED_EVENT;
  app_name: string;
  /** Milliseconds since the Unix epoch. */
  timestamp: number;
  sequence: number;
  data: Record<string, unknown>;
}

// The `events` / `subscribe_events` query syntax (spec "Event subscription"): comma-separated
// START, EXIT, STDOUT, HEALTH, STATUS, REMOVED, ALL; an empty value selects all events.
import { EVENT_TYPES, SvcError, type EventType } from '@svc/protocol';

/** Every event type, in the order of the spec's table (also the order of `events` in answers). */
export const ALL_EVENTS: readonly EventType[] = Object.keys(EVENT_TYPES) as EventType[];

export interface EventSelection {
  readonly events: ReadonlySet<EventType>;
  /** True when the caller asked for everything (empty value or ALL), not for named events. */
  readonly all: boolean;
}

const MAX_LIST_CHARS = 256;

/**
 * Parse an event list. Names are matched case-insensitively, surrounding blanks and empty items
 * (`START,,EXIT,`) are ignored; an unknown name is a 400 `invalid_query` naming it.
 */
export function parseEventList(value: string | undefined, parameter = 'events'): EventSelection {
  if (value === undefined || value.trim() === '') return { events: new Set(ALL_EVENTS), all: true };
  if (value.length > MAX_LIST_CHARS)
    throw new SvcError('invalid_query', `${parameter}: at most ${MAX_LIST_CHARS} characters`);
  const events = new Set<EventType>();
  let all = false;
  for (const raw of value.split(',')) {
    const name = raw.trim().toUpperCase();
    if (name === '') continue;
    if (name === 'ALL') all = true;
    else if (Object.hasOwn(EVENT_TYPES, name)) events.add(name as EventType);
    else
      throw new SvcError(
        'invalid_query',
        `${parameter}: unknown event ${JSON.stringify(raw.trim().slice(0, 40))}; expected a comma-separated list of ${ALL_EVENTS.join(', ')} or ALL`,
      );
  }
  if (all || events.size === 0) return { events: new Set(ALL_EVENTS), all: true };
  return { events, all: false };
}

/** The events of a selection as an array in canonical order. */
export function eventList(events: ReadonlySet<EventType>): EventType[] {
  return ALL_EVENTS.filter((e) => events.has(e));
}

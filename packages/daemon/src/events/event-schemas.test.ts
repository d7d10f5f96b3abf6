import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '@svc/protocol';
import { EVENT_DATA_SCHEMAS, eventSchemaFiles } from './event-schemas.ts';

describe('event payload schemas', () => {
  it('name exactly the data fields of the protocol registry, for every event', () => {
    for (const [name, { data }] of Object.entries(EVENT_TYPES))
      expect(Object.keys(EVENT_DATA_SCHEMAS[name as keyof typeof EVENT_TYPES].shape).sort()).toEqual(
        [...data].sort(),
      );
  });
  it('refuse a payload with a missing or an extra field', () => {
    expect(EVENT_DATA_SCHEMAS.START.safeParse({ pid: 1 }).success).toBe(false);
    expect(EVENT_DATA_SCHEMAS.REMOVED.safeParse({ extra: 1 }).success).toBe(false);
    expect(EVENT_DATA_SCHEMAS.HEALTH.safeParse({ health: 0, previous_health: 1 }).success).toBe(true);
  });
  it('give one JSON Schema file per event plus the message', () => {
    expect([...eventSchemaFiles().keys()].sort()).toEqual(
      ['message', ...Object.keys(EVENT_TYPES)].map((n) => `${n}.schema.json`).sort(),
    );
  });
});

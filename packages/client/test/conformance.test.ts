// Conformance scenarios S1–S8 run from their language-neutral data (spec/conformance/S<n>.json,
// format in spec/README.md) against a real svcd from @svc/testkit, over each transport a scenario
// names. This file only maps the data's steps onto the TypeScript client; clients in other languages
// run the same files. The scripted-server halves run in conformance-scripted.test.ts.
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { startTestDaemon, TEST_PRINCIPALS, type TestDaemon } from '@svc/testkit';
import {
  AppRemovedError,
  API_ERRORS,
  connect,
  isPersistent,
  TransportDisconnectedError,
  type EventSelection,
  type PersistentTransport,
  type SubscriptionEvent,
  type SvcClient,
} from '../src/index.ts';
import { loadScenarios } from './conformance-data.ts';

type Step = Record<string, unknown> & { do: string };
interface Scenario {
  id: string;
  title: string;
  transports: ('tcp' | 'wss')[];
  daemon?: { fresh?: boolean; steps: Step[] };
}

const SCENARIOS = loadScenarios<Scenario>();

let shared: TestDaemon;
beforeAll(async () => {
  shared = await startTestDaemon();
});
afterAll(async () => {
  await shared?.close();
});

/** Error names of the data → the TypeScript client's error classes. */
function errorMatches(error: unknown, name: string): boolean {
  if (name === 'app_removed') return error instanceof AppRemovedError;
  if (name === 'transport_disconnected') return error instanceof TransportDisconnectedError;
  const api = (API_ERRORS as Record<string, new (...args: never[]) => Error>)[name];
  return api !== undefined && error instanceof api;
}

/** The state of one scenario run: named results, clients and their spies. */
class Run {
  readonly vars = new Map<string, unknown>();
  readonly clients = new Map<string, SvcClient>();
  readonly spies = new Map<string, MockInstance>();
  readonly subscribed = new Map<string, Promise<void>>();
  killedAt = 0;
  readonly daemon: TestDaemon;
  readonly token: string;
  readonly transport: 'tcp' | 'wss';

  constructor(daemon: TestDaemon, token: string, transport: 'tcp' | 'wss') {
    this.daemon = daemon;
    this.token = token;
    this.transport = transport;
    this.vars.set('transport', transport);
    this.vars.set('admin_principal', TEST_PRINCIPALS.admin.sub);
  }

  /** `${name}` / `${name.field}` substitution, recursively; a string that is only `${x}` keeps x's type. */
  resolve(value: unknown): unknown {
    if (typeof value === 'string') {
      const whole = /^\$\{([^}]+)\}$/.exec(value);
      if (whole !== null) return this.lookup(whole[1]!);
      return value.replace(/\$\{([^}]+)\}/g, (_, path: string) => String(this.lookup(path)));
    }
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (typeof value === 'object' && value !== null)
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.resolve(v)]));
    return value;
  }

  lookup(path: string): unknown {
    const [head, ...rest] = path.split('.');
    let value: unknown = this.vars.get(head!);
    for (const key of rest) value = (value as Record<string, unknown> | undefined)?.[snakeToCamel(key)];
    return value;
  }

  client(step: Step): SvcClient {
    const client = this.clients.get(str(step, 'client'));
    if (client === undefined) throw new Error(`no client ${str(step, 'client')}`);
    return client;
  }

  spy(client: string, method: string): MockInstance {
    const spy = this.spies.get(`${client}.${method}`);
    if (spy === undefined) throw new Error(`no spy ${client}.${method}`);
    return spy;
  }
}

/** A string argument of a step (the data's strings are substituted already). */
function str(step: Step, key: string): string {
  const value = step[key];
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  throw new Error(`step ${step.do}: ${key} must be a string`);
}

function snakeToCamel(key: string): string {
  // Results of the TS client use camelCase (exitCode); wire answers keep snake_case (subscription_id).
  return key === 'exit_code' ? 'exitCode' : key;
}

function persistent(client: SvcClient): PersistentTransport {
  if (!isPersistent(client.transport)) throw new Error('not persistent');
  return client.transport;
}

const DEMUX: Record<string, (t: PersistentTransport) => number> = {
  dropped_events: (t) => t.demux.droppedEvents,
  buffered_subscriptions: (t) => t.demux.bufferedSubscriptions,
  pending_requests: (t) => t.demux.pendingRequests,
};

async function connectClient(run: Run, step: Step): Promise<void> {
  const name = str(step, 'as');
  const kind = (step['transport'] as 'tcp' | 'wss' | 'rest' | undefined) ?? run.transport;
  const d = run.daemon;
  const client = await connect({
    url: d.restUrl,
    transport: kind,
    tcpPort: d.tcpPort,
    ca: d.ca,
    token: run.token,
  });
  run.clients.set(name, client);
  run.spies.set(`${name}.deleteApplication`, vi.spyOn(client, 'deleteApplication'));
  run.spies.set(`${name}.unsubscribe`, vi.spyOn(client, 'unsubscribe'));
  run.spies.set(`${name}.getApplication`, vi.spyOn(client, 'getApplication'));
  // Resolves once the client's run-wait has its subscription in place (its subscribe answered).
  const original = client.subscribe.bind(client);
  run.subscribed.set(
    name,
    new Promise<void>((resolve) => {
      vi.spyOn(client, 'subscribe').mockImplementation(async (...args) => {
        const info = await original(...args);
        resolve();
        return info;
      });
    }),
  );
}

async function perform(run: Run, raw: Step): Promise<void> {
  const step = raw.do === 'advance_clock' ? raw : (run.resolve(raw) as Step);
  const as = step['as'] as string | undefined;
  const keep = (value: unknown): void => {
    if (as !== undefined) run.vars.set(as, value);
  };
  switch (step.do) {
    case 'connect':
      return connectClient(run, step);
    case 'register': {
      const subscribe = step['subscribe'] as EventSelection | undefined;
      const events: SubscriptionEvent[] = [];
      if (step['events_as'] !== undefined) run.vars.set(str(step, 'events_as'), events);
      keep(
        await run
          .client(step)
          .registerApplication(
            str(step, 'name'),
            step['app'] as Record<string, unknown>,
            subscribe === undefined
              ? undefined
              : { subscribeEvents: subscribe, onEvent: (e) => void events.push(e) },
          ),
      );
      return;
    }
    case 'run':
      keep(await run.client(step).run(step['app'] as Record<string, unknown>));
      return;
    case 'wait_run': {
      const output: string[] = [];
      const wait = run
        .client(step)
        .waitForAsyncRun(run.vars.get(str(step, 'run')) as { name: string; process_uuid: string }, {
          timeoutMs: Number(step['timeout_ms']),
          onOutput: (text) => void output.push(text),
        });
      // The handler is attached at once: the outcome may come before the next step returns.
      const settled = wait.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      if (step['output_as'] !== undefined) run.vars.set(str(step, 'output_as'), output);
      if (step['background'] === true) keep(settled);
      else keep(await settled);
      return;
    }
    case 'await_subscribed':
      return run.subscribed.get(str(step, 'client'));
    case 'output': {
      keep(
        await run.client(step).getOutput(str(step, 'name'), {
          position: Number(step['position']),
          timeoutSeconds: Number(step['timeout_seconds']),
        }),
      );
      return;
    }
    case 'advance_clock': {
      vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval'] });
      try {
        const pending = perform(run, step['while'] as Step);
        await vi.advanceTimersByTimeAsync(Number(step['ms']));
        vi.useRealTimers();
        await pending;
      } finally {
        vi.useRealTimers();
      }
      return;
    }
    case 'request': {
      const client = run.client(step);
      const count = Number(step['count'] ?? 1);
      const call = (): Promise<unknown> =>
        client
          .request({
            method: str(step, 'method'),
            path: str(step, 'path'),
            ...(step['query'] === undefined ? {} : { query: step['query'] as Record<string, string> }),
          })
          .then((r) => JSON.parse(Buffer.from(r.body).toString('utf8')) as unknown);
      if (step['sequential'] === true) {
        const answers = [];
        for (let i = 0; i < count; i++) answers.push(await call());
        keep(answers);
      } else keep(await Promise.all(Array.from({ length: count }, call)));
      return;
    }
    case 'disable':
      await run.client(step).disableApplication(str(step, 'name'));
      return;
    case 'delete_app':
      await run.client(step).deleteApplication(str(step, 'name'));
      return;
    case 'unsubscribe':
      await run.client(step).unsubscribe(str(step, 'id'));
      return;
    case 'get_app':
      keep(
        await run
          .client(step)
          .getApplication(str(step, 'name'))
          .catch((error: unknown) => ({ error })),
      );
      return;
    case 'await_event': {
      const events = run.vars.get(str(step, 'events')) as SubscriptionEvent[];
      await vi.waitFor(() => expect(events.some((e) => e.event_type === step['event_type'])).toBe(true), {
        timeout: 30_000,
      });
      return;
    }
    case 'kill_daemon':
      run.killedAt = Date.now();
      await run.daemon.kill();
      return;
    case 'await_closed':
      await persistent(run.client(step)).closed;
      return;
    case 'close':
      await run.client(step).close();
      return;
    case 'expect':
      return check(run, step);
    default:
      throw new Error(`unknown step ${step.do}`);
  }
}

async function check(run: Run, step: Step): Promise<void> {
  if (step['calls'] !== undefined) {
    const [client, method] = str(step, 'calls').split('.') as [string, string];
    const spy = run.spy(client, method);
    if (step['count'] !== undefined) expect(spy).toHaveBeenCalledTimes(Number(step['count']));
    if (step['with'] !== undefined) expect(spy).toHaveBeenCalledWith(...(step['with'] as unknown[]));
    return;
  }
  if (step['demux'] !== undefined) {
    const transport = persistent(run.clients.get(str(step, 'demux'))!);
    const wanted = step['equals'] as Record<string, number>;
    const actual = (): Record<string, number> =>
      Object.fromEntries(Object.keys(wanted).map((k) => [k, DEMUX[k]!(transport)]));
    if (step['eventually'] === true)
      await vi.waitFor(() => expect(actual()).toEqual(wanted), { timeout: 30_000 });
    else expect(actual()).toEqual(wanted);
    return;
  }
  let value = run.lookup(str(step, 'of'));
  if (value instanceof Promise) value = await value;
  // wait_run results are {value} or {error}; get_app failures are {error}.
  const outcome = value as { value?: unknown; error?: unknown } | undefined;
  if (step['error'] !== undefined) {
    expect(outcome?.error, `${str(step, 'of')} fails with ${str(step, 'error')}`).toBeDefined();
    expect(errorMatches(outcome!.error, str(step, 'error')), String(outcome!.error)).toBe(true);
    if (step['within_ms_of_kill'] !== undefined)
      expect(Date.now() - run.killedAt).toBeLessThan(Number(step['within_ms_of_kill']));
    return;
  }
  if (typeof value === 'object' && value !== null && 'value' in value) value = value.value;
  if (Array.isArray(value) && typeof value[0] === 'string' && typeof step['equals'] === 'string')
    value = value.join(''); // collected output
  if ('equals' in step) expect(value).toEqual(step['equals']);
  if (step['absent'] === true) expect(value).toBeUndefined();
  if (step['type'] !== undefined) expect(typeof value).toBe(step['type']);
  if (step['every'] !== undefined)
    for (const item of value as unknown[]) expect(item).toMatchObject(step['every'] as object);
  if (step['until'] !== undefined) checkEvents(value as SubscriptionEvent[], step);
}

function checkEvents(all: SubscriptionEvent[], step: Step): void {
  const events = all.slice(0, all.findIndex((e) => e.event_type === step['until']) + 1);
  if (step['sequences_gapless'] === true) {
    const sequences = events.map((e) => ('sequence' in e ? e.sequence : -1));
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
  }
  if (step['first_type'] !== undefined) expect(events[0]!.event_type).toBe(step['first_type']);
  const stdout = events.filter((e) => e.event_type === 'STDOUT');
  if (step['stdout_text'] !== undefined)
    expect(stdout.map((e) => ('data' in e ? (e.data as { output: string }).output : '')).join('')).toBe(
      step['stdout_text'],
    );
  if (step['last_stdout_finished'] === true)
    expect(stdout.at(-1)).toMatchObject({ data: { finished: true } });
}

describe('spec/conformance holds S1–S8', () => {
  it('one file per scenario, each with real-daemon steps', () => {
    expect(SCENARIOS.map((s) => s.id)).toEqual(['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8']);
    for (const s of SCENARIOS) expect(s.daemon?.steps.length, s.id).toBeGreaterThan(0);
  });
});

for (const scenario of SCENARIOS) {
  describe(`${scenario.id}: ${scenario.title}`, () => {
    it.each(scenario.transports.map((t) => [t]))('over %s against a real daemon', async (transport) => {
      await using fresh = scenario.daemon?.fresh === true ? await startTestDaemon() : undefined;
      const daemon = fresh ?? shared;
      const run = new Run(daemon, await daemon.token('admin'), transport);
      try {
        for (const step of scenario.daemon!.steps) await perform(run, step);
      } finally {
        vi.useRealTimers();
        vi.restoreAllMocks();
        for (const client of run.clients.values()) await client.close().catch(() => undefined);
      }
    });
  });
}

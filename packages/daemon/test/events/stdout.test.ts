// STDOUT events against a real daemon over raw TCP and WSS: the atomic registration of a fast app,
// positions equal to the output API, UTF-8 sequences split across writes, the wildcard final drain,
// a stalled subscriber, and a re-attached process after a daemon restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '@svc/testkit';
import {
  expectGapless,
  message,
  ok,
  stallableClient,
  stdoutText,
  subscribe,
  waitEvents,
  waitFor,
} from './helpers.ts';

let daemon: TestDaemon;
let admin: string;
beforeAll(async () => {
  daemon = await startTestDaemon();
  admin = await daemon.token('admin');
});
afterAll(async () => {
  await daemon?.close();
});

const node = (script: string): { command: string; shell: true } => ({
  command: `'${process.execPath}' -e '${script}'`,
  shell: true,
});

describe.each([['tcp'], ['wss']] as const)('over %s', (kind) => {
  it.each([
    ['true', ''],
    ['echo x', 'x\n'],
    ['printf "a\\nb\\n"; exit 3', 'a\nb\n'],
  ])('a fast app (%s) registered with subscribe_events=ALL loses nothing', async (command, text) => {
    const client = kind === 'tcp' ? await daemon.tcp() : await daemon.wss(admin);
    const name = `fast-${kind}-${command.length}`;
    const reg = ok(
      await client.call('PUT', `/svc/app/${name}`, {
        token: admin,
        query: { subscribe_events: 'ALL' },
        body: { command, shell: true },
      }),
    );
    const app = reg.json<{ subscription_id: string; name: string; process_uuid: string }>();
    expect(app.name).toBe(name);
    const events = await waitEvents(
      client,
      app.subscription_id,
      (e) => e.some((x) => x.event_type === 'EXIT'),
      'EXIT',
    );
    expectGapless(events);
    // (A failing exit restarts the app: only the first process is looked at.)
    events.splice(events.findIndex((e) => e.event_type === 'EXIT') + 1);
    const types = events.map((e) => e.event_type);
    const finished = events.filter((e) => e.event_type === 'STDOUT' && e.data['finished'] === true);
    expect(finished).toHaveLength(1);
    // START, STDOUT (with the text, when there is some), STDOUT finished, EXIT — in this order.
    expect(types[0]).toBe('START');
    expect(types.at(-1)).toBe('EXIT');
    expect(types.at(-2)).toBe('STDOUT');
    expect(events.at(-2)!.data).toMatchObject({
      finished: true,
      output: '',
      position: Buffer.byteLength(text),
    });
    expect(types.slice(1, -2).every((t) => t === 'STDOUT')).toBe(true);
    expect(stdoutText(events)).toBe(text);
    // One process (a failing exit restarts the app, so the answer may already name the next one).
    expect(events.at(-1)!.data['process_uuid']).toBe(events[0]!.data['process_uuid']);
    expect(events.at(-1)!.data).toMatchObject({ exit_code: command.includes('exit 3') ? 3 : 0 });
    ok(await client.call('DELETE', `/svc/app/${name}`, { token: admin }));
    await client.close();
  });
});

describe('STDOUT content', () => {
  it('positions are the output API offsets; UTF-8 split across writes arrives intact', async () => {
    const client = await daemon.tcp();
    // Multi-byte characters written one byte at a time with pauses, so reads land mid-sequence.
    const text = 'héllo wörld — 日本語 🎉 ok\n'.repeat(3);
    const bytes = [...Buffer.from(text)];
    const script = `const s=new Int32Array(new SharedArrayBuffer(4));const b=Buffer.from(${JSON.stringify(bytes)});for(const x of b){require("fs").writeSync(1,Buffer.from([x]));Atomics.wait(s,0,0,1)}`;
    const reg = ok(
      await client.call('PUT', '/svc/app/utf8', {
        token: admin,
        query: { subscribe_events: 'STDOUT,EXIT' },
        body: node(script),
      }),
    );
    const id = reg.json<{ subscription_id: string }>().subscription_id;
    const events = await waitEvents(client, id, (e) => e.some((x) => x.event_type === 'EXIT'), 'EXIT');
    expectGapless(events);
    const chunks = events.filter((e) => e.event_type === 'STDOUT');
    expect(chunks.length).toBeGreaterThan(3); // really split
    for (const c of chunks) expect(c.data['output'] as string).not.toContain('\uFFFD');
    expect(stdoutText(events)).toBe(text);
    // Each chunk's position reads the same bytes through GET /svc/app/{name}/output.
    for (const c of chunks.filter((x) => x.data['output'] !== '')) {
      const output = c.data['output'] as string;
      const r = ok(
        await client.call('GET', '/svc/app/utf8/output', {
          token: admin,
          query: {
            stdout_position: String(c.data['position']),
            stdout_maxsize: String(Buffer.byteLength(output)),
          },
        }),
      );
      expect(r.text()).toBe(output);
    }
    ok(await client.call('DELETE', '/svc/app/utf8', { token: admin }));
    await client.close();
  });

  it('a wildcard STDOUT subscription gets live output and the final drain of every app', async () => {
    const client = await daemon.wss(admin);
    const sub = await subscribe(client, admin, undefined, 'STDOUT');
    const names = ['wild-a', 'wild-b', 'wild-c'];
    for (const name of names)
      ok(
        await client.call('PUT', `/svc/app/${name}`, {
          token: admin,
          body: { command: `echo ${name}; echo done`, shell: true },
        }),
      );
    const events = await waitEvents(
      client,
      sub.subscription_id,
      (e) => names.every((n) => e.some((x) => x.app_name === n && x.data['finished'] === true)),
      'the finished STDOUT of every app',
    );
    expectGapless(events);
    for (const name of names)
      expect(stdoutText(events.filter((e) => e.app_name === name))).toBe(`${name}\ndone\n`);
    for (const name of names) ok(await client.call('DELETE', `/svc/app/${name}`, { token: admin }));
    await client.close();
  });

  it('a subscriber that joins a running process gets what is written from then on', async () => {
    const client = await daemon.tcp();
    ok(
      await client.call('PUT', '/svc/app/late', {
        token: admin,
        body: { command: 'echo before; sleep 0.3; echo after; sleep 600', shell: true },
      }),
    );
    await waitFor(
      async () =>
        ok(await client.call('GET', '/svc/app/late/output', { token: admin }))
          .text()
          .includes('before') || undefined,
      { what: 'the first line' },
    );
    const sub = await subscribe(client, admin, 'late', 'STDOUT');
    const events = await waitEvents(
      client,
      sub.subscription_id,
      (e) => stdoutText(e).includes('after'),
      'after',
    );
    expect(stdoutText(events)).toBe('after\n');
    expect(events[0]!.data['position']).toBe('before\n'.length);
    ok(await client.call('DELETE', '/svc/app/late', { token: admin }));
    await client.close();
  });
});

describe('back-pressure', () => {
  it('a stalled subscriber does not delay others and is disconnected with its subscriptions removed', async () => {
    const developer = await daemon.token('developer');
    const stalled = await stallableClient(daemon.tcpPort, daemon.ca);
    const other = await daemon.tcp();
    const dev = await daemon.tcp(); // a connection is pinned to one principal
    // A flood of ~200 MB of output, subscribed to by a connection that then stops reading.
    const flood = node(
      'const b=Buffer.alloc(1<<20,97);const fs=require("fs");for(let i=0;i<200;i++)fs.writeSync(1,b);setInterval(()=>{},1e6)',
    );
    ok(
      await dev.call('PUT', '/svc/app/flood', {
        token: developer,
        body: { ...flood, start_time: '2999-01-01T00:00:00Z' }, // not started yet
      }),
    );
    const answer = await stalled.call('POST', '/svc/app/flood/subscribe', developer, { events: 'STDOUT' });
    expect(answer.http_status).toBe(200);
    const stalledId = (JSON.parse(Buffer.from(answer.body).toString()) as { subscription_id: string })
      .subscription_id;
    stalled.stall();
    ok(await other.call('PUT', '/svc/app/beat', { token: admin, body: { command: 'sleep 600' } }));
    const beat = await subscribe(other, admin, 'beat', 'STATUS');
    ok(await dev.call('PUT', '/svc/app/flood', { token: developer, body: flood })); // the flood starts
    // Meanwhile the other connection's events keep flowing promptly.
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      ok(await other.call('POST', `/svc/app/beat/${i % 2 === 0 ? 'disable' : 'enable'}`, { token: admin }));
      await waitEvents(other, beat.subscription_id, (e) => e.length === i + 1, `beat ${i}`, 2_000);
      expect(performance.now() - t0).toBeLessThan(1_000);
    }
    // The daemon drops the stalled connection's subscription once its queue is over budget (the
    // event hub says so in its log); then even its owner, on another connection, finds none (a
    // DELETE would remove it, 200, had it been left).
    await waitFor(
      () => daemon.stderr().includes('event delivery failed; removing the subscriptions of the connection'),
      { what: 'the stalled subscription to be removed', timeoutMs: 20_000, intervalMs: 50 },
    );
    const gone = await dev.call('DELETE', '/svc/subscribe', {
      token: developer,
      query: { subscription_id: stalledId },
    });
    expect(gone.status).toBe(404);
    // The connection was closed: reading again finds what was queued, then the end.
    stalled.socket.resume();
    await stalled.closed;
    const received = stalled.pushes.map(message).filter((m) => m.subscription_id === stalledId);
    expect(received.length).toBeGreaterThan(0);
    expectGapless(received); // what arrived has no gap; nothing was skipped silently
    ok(await dev.call('DELETE', '/svc/app/flood', { token: developer }));
    await dev.close();
    ok(await other.call('DELETE', '/svc/app/beat', { token: admin }));
    await other.close();
  });
});

describe('daemon restart', () => {
  it('a re-attached process keeps its STDOUT flowing to a new subscription', async () => {
    const home = daemon.home;
    const client = await daemon.tcp();
    // Prints a numbered line every 50 ms, forever.
    ok(
      await client.call('PUT', '/svc/app/survivor', {
        token: admin,
        body: node('let i=0;setInterval(()=>require("fs").writeSync(1,"tick "+(i++)+"\\n"),50)'),
      }),
    );
    await client.close();
    await daemon.stop();
    daemon = await startTestDaemon({ home, issuer: daemon.issuer });
    admin = await daemon.token('admin');
    const again = await daemon.wss(admin);
    const app = ok(await again.call('GET', '/svc/app/survivor', { token: admin })).json<{ state: string }>();
    expect(app.state).toBe('running');
    const sub = await subscribe(again, admin, 'survivor', 'STDOUT');
    const events = await waitEvents(
      again,
      sub.subscription_id,
      (e) => e.length >= 3,
      'three ticks after the restart',
    );
    expectGapless(events);
    const text = stdoutText(events);
    expect(text).toMatch(/^(tick \d+\n)+/);
    // The positions are those of the output API.
    const first = events[0]!.data;
    const r = ok(
      await again.call('GET', '/svc/app/survivor/output', {
        token: admin,
        query: {
          stdout_position: String(first['position']),
          stdout_maxsize: String(Buffer.byteLength(first['output'] as string)),
        },
      }),
    );
    expect(r.text()).toBe(first['output']);
    ok(await again.call('DELETE', '/svc/app/survivor', { token: admin }));
    await again.close();
  });
});

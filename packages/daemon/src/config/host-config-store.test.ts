import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SvcError } from '@svc/protocol';
import { loadConfig, type DaemonConfig } from '@svc/platform/config';
import { applyTimezone, HostConfigStore } from './host-config-store.ts';

let home: string;
let config: DaemonConfig;
let levels: string[];
let store: HostConfigStore;
const savedTz = process.env['TZ'];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'svc-hostconfig-'));
  config = await loadConfig({
    SVC_HOME: home,
    SVC_AUTH_MODE: 'external',
    SVC_OIDC_ISSUER: 'https://i.example',
  });
  levels = [];
  store = await HostConfigStore.open(config, { setLogLevel: (level) => levels.push(level) });
});
afterEach(async () => {
  applyTimezone(savedTz);
  await rm(home, { recursive: true, force: true });
});

const overrides = async (): Promise<Record<string, unknown>> =>
  parse(await readFile(join(home, 'work', 'config', 'config.yaml'), 'utf8')) as Record<string, unknown>;

describe('HostConfigStore.update', () => {
  it('applies live keys at once, lists start-only keys that change, and persists both', async () => {
    const result = await store.update({
      BaseConfig: { LogLevel: 'debug', DisableExecUser: true, ScheduleIntervalSeconds: 2 },
      REST: { ForwardTargets: ['h:1'], RestPort: config.restPort },
    });
    expect(levels).toEqual(['debug']);
    expect(config.logLevel).toBe('debug');
    expect(config.disableExecUser).toBe(true);
    expect(config.forwardTargets).toEqual(['h:1']);
    expect(config.scheduleIntervalSeconds).toBe(10); // start-only: the running value stays
    expect(result.restart_required).toEqual(['BaseConfig.ScheduleIntervalSeconds']);
    expect(await overrides()).toEqual({
      BaseConfig: { LogLevel: 'DEBUG', DisableExecUser: true, ScheduleIntervalSeconds: 2 },
      REST: { ForwardTargets: ['h:1'], RestPort: config.restPort },
    });
    // A restart reads them back.
    const next = await loadConfig({
      SVC_HOME: home,
      SVC_AUTH_MODE: 'external',
      SVC_OIDC_ISSUER: 'https://i.example',
    });
    expect(next.scheduleIntervalSeconds).toBe(2);
    expect(next.logLevel).toBe('debug');
  });

  it('DefaultExecUser "" means the daemon user; PosixTimezone sets TZ for this process', async () => {
    await store.update({ BaseConfig: { DefaultExecUser: 'svc-runner', PosixTimezone: 'Asia/Tokyo' } });
    expect(config.defaultExecUser).toBe('svc-runner');
    expect(process.env['TZ']).toBe('Asia/Tokyo');
    expect(new Date(Date.UTC(2026, 0, 1, 0, 0)).getHours()).toBe(9);
    await store.update({ BaseConfig: { DefaultExecUser: '', PosixTimezone: 'UTC' } });
    expect(config.defaultExecUser).toBeUndefined();
    expect(new Date(Date.UTC(2026, 0, 1, 0, 0)).getHours()).toBe(0);
    expect(store.view().BaseConfig).toMatchObject({ DefaultExecUser: '', PosixTimezone: 'UTC' });
  });

  it('refuses bad input with SvcError bad_request and changes nothing', async () => {
    const before = JSON.stringify(store.view());
    for (const input of [
      null,
      'text',
      [],
      { log_level: 'debug' },
      { BaseConfig: { LogLevel: 'LOUD' } },
      { REST: { Limits: { HeadersTimeoutMs: 5000, RequestTimeoutMs: 1000 } } },
      { REST: { SSL: { CertFile: 'c.pem' } } },
      { Auth: { Mode: 'external', Issuer: undefined }, Extra: 1 },
    ]) {
      await expect(store.update(input), JSON.stringify(input)).rejects.toBeInstanceOf(SvcError);
    }
    expect(JSON.stringify(store.view())).toBe(before);
    expect(levels).toEqual([]);
  });

  it('serializes concurrent changes: labels and settings all land', async () => {
    await Promise.all([
      store.setLabel('a', '1'),
      store.update({ Labels: { b: '2' } }),
      store.setLabel('c', '3'),
      store.update({ BaseConfig: { Description: 'x' } }),
      store.deleteLabel('a'),
    ]);
    expect(config.labels).toEqual({ b: '2', c: '3' });
    expect(await overrides()).toEqual({ Labels: { b: '2', c: '3' }, BaseConfig: { Description: 'x' } });
  });
});

describe('HostConfigStore and the Registry section', () => {
  it('accepts a valid registry (restart required) and refuses one the next start would refuse', async () => {
    const result = await store.update({ Registry: { Url: 'http://127.0.0.1:2379', SessionTTL: 5 } });
    expect(result.restart_required).toEqual(expect.arrayContaining(['Registry.Url', 'Registry.SessionTTL']));
    expect(config.cluster).toBeUndefined(); // read at start only
    for (const Registry of [
      { Url: 'ftp://127.0.0.1:1' },
      { Url: 'http://root:hunter2@127.0.0.1:1' },
      { Url: 'http://127.0.0.1:1', SessionTTL: 1 },
      { Url: 'http://127.0.0.1:1', SSL: { CaFile: 'ca.pem' } },
    ]) {
      const refused = await store.update({ Registry }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SvcError);
      expect((refused as SvcError).message).toMatch(/^Registry\./);
      expect((refused as SvcError).message).not.toContain('hunter2');
    }
  });

  it('tells label listeners about PUT/DELETE label and POST config label changes', async () => {
    const seen: Record<string, string>[] = [];
    const off = store.onLabels((labels) => seen.push({ ...labels }));
    await store.setLabel('zone', 'east');
    await store.update({ Labels: { rack: 'r1' } });
    await store.deleteLabel('zone');
    off();
    await store.setLabel('late', 'x');
    expect(seen).toEqual([{ zone: 'east' }, { zone: 'east', rack: 'r1' }, { rack: 'r1' }]);
  });
});

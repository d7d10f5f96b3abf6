// What spec/openapi.json says of a definition is what the daemon does: its JSON Schemas (checked
// with a JSON Schema validator, as a client would) accept every definition the operations accept,
// and refuse the bad values JSON Schema can express.
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuzzParameters, hostileAppBody, validAppBody } from '@svc/testkit';
import { parseAppDefinition, toPublicView } from '../model/app-definition.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { AppDefinition, RunDefinition } from './schemas.ts';

const document = buildOpenApiDocument() as { components: { schemas: Record<string, unknown> } };
const $defs = JSON.parse(
  JSON.stringify(document.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/'),
) as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false, allErrors: true });
const component = (name: string) => ajv.compile({ $ref: `#/$defs/${name}`, $defs });
const appDefinition = component('AppDefinition');
const runDefinition = component('RunDefinition');
const appView = component('AppView');

const base = { name: 'web', command: 'ls' };

describe('the OpenAPI document of a definition', () => {
  it('accepts every definition the operations accept, as they hand it on', () => {
    fc.assert(
      fc.property(fc.oneof(validAppBody, hostileAppBody), (raw) => {
        const body = JSON.parse(JSON.stringify(raw)) as unknown;
        const accepted = AppDefinition.safeParse(body);
        if (accepted.success)
          expect(appDefinition(accepted.data), JSON.stringify(appDefinition.errors)).toBe(true);
        const run = RunDefinition.safeParse(body);
        if (run.success) expect(runDefinition(run.data), JSON.stringify(runDefinition.errors)).toBe(true);
      }),
      fuzzParameters(2000),
    );
  });

  it.each<[string, unknown]>([
    ['command', ''],
    ['command', 'x'.repeat(65_537)],
    ['shell', 'true'],
    ['working_dir', 'srv'],
    ['env', { '1A': 'x' }],
    ['env', { A: 1 }],
    ['stdout_backup_count', 101],
    ['start_time', -1],
    ['start_time', 'tomorrow'],
    ['interval', -1],
    ['interval', 'P1M'],
    ['interval', 2 ** 31],
    ['daily_limitation', { daily_start: '9:00', daily_end: '10:00' }],
    ['daily_limitation', { daily_start: '09:00' }],
    ['depends_on', ['../x']],
    ['depends_on', Array.from({ length: 65 }, (_, i) => `d${i}`)],
    ['resource_limit', { memory: 1 }],
    ['resource_limit', { cpu_shares: 0 }],
    ['behavior', { exit: 'always' }],
    ['behavior', { exit_code_actions: { abc: 'restart' } }],
    ['behavior', { exit_code_actions: { '1': 'reboot' } }],
    ['permission', 41],
    ['permission', '5'],
    ['pid', 0],
    ['docker_image', ''],
    ['comand', 'x'],
  ])('refuses %s: %j, as the daemon does', (field, value) => {
    const body = { ...base, [field]: value };
    expect(AppDefinition.safeParse(body).success).toBe(false);
    expect(appDefinition(body)).toBe(false);
  });

  it('describes both forms of a run', () => {
    expect(runDefinition({ command: 'ls' })).toBe(true);
    expect(runDefinition({ name: 'web', env: { A: '1' }, metadata: { job: 1 } })).toBe(true);
    expect(runDefinition({ name: 'web', shell: true })).toBe(false);
    expect(runDefinition({ name: 'web', env: { '1A': 'x' } })).toBe(false);
  });

  it('describes the app view as the daemon answers it', () => {
    fc.assert(
      fc.property(validAppBody, (body) => {
        const view = {
          ...toPublicView(parseAppDefinition(body)),
          state: 'running',
          pid: 4321,
          last_start_time: 1_700_000_000,
          health: 0,
        };
        expect(appView(JSON.parse(JSON.stringify(view))), JSON.stringify(appView.errors)).toBe(true);
      }),
      fuzzParameters(300),
    );
  });
});

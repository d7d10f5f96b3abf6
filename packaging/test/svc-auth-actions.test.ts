// svc-auth.sh and svc-auth.ps1 against their one table (script/svc-auth-actions.json): the same
// actions in the same order with the same arguments and descriptions, argument counts, stdin use,
// secret-file checks, usage lines and messages. No PowerShell runs on these machines, so the .ps1
// is checked as text; the .sh is also run, for every action's usage refusal.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const SCRIPTS = resolve(import.meta.dirname, '../../script');
const TABLE = JSON.parse(readFileSync(join(SCRIPTS, 'svc-auth-actions.json'), 'utf8')) as {
  messages: Record<string, string>;
  actions: {
    action: string;
    arguments: string;
    description: string;
    argc: [number, number];
    stdin: boolean;
    secret_file: string | null;
    usage: string;
  }[];
};
const SH = readFileSync(join(SCRIPTS, 'svc-auth.sh'), 'utf8');
const PS1 = readFileSync(join(SCRIPTS, 'svc-auth.ps1'), 'utf8');
const run = promisify(execFile);

/** The `#   action args   description` lines of a script's header, in order. */
function headerRows(text: string): { action: string; arguments: string; description: string }[] {
  return [...text.matchAll(/^# {3}(\S+)(.*?)\s{2,}(\S.*)$/gm)].map((m) => ({
    action: m[1]!,
    arguments: m[2]!.trim(),
    description: m[3]!.trim(),
  }));
}

/** The text of the branch that handles `action`: from its label to the next label. */
function branch(text: string, label: RegExp): string {
  const start = text.search(label);
  expect(start, String(label)).toBeGreaterThan(-1);
  const rest = text.slice(start);
  const end = rest.slice(1).search(/^ {2}(?:[a-z-]+(?: \|.*)?\)|'[a-z-]+' \{|\{ \$_ -in)/m);
  return end === -1 ? rest : rest.slice(0, end + 1);
}

const shBranch = (action: string): string =>
  branch(SH, new RegExp(`^ {2}(?:[a-z| -]*\\b)?${action}(?: \\|[^)]*)?\\)`, 'm'));
const psBranch = (action: string): string =>
  branch(PS1, new RegExp(`^ {2}(?:'${action}' \\{|\\{ \\$_ -in [^}]*'${action}'[^}]*\\} \\{)`, 'm'));

describe('svc-auth.sh and svc-auth.ps1 agree with script/svc-auth-actions.json', () => {
  const table = TABLE.actions.map(({ action, arguments: args, description }) => ({
    action,
    arguments: args,
    description,
  }));

  it('list the same actions, arguments and descriptions in their headers, in order', () => {
    expect(headerRows(SH)).toEqual(table);
    expect(headerRows(PS1)).toEqual(table);
  });

  for (const entry of TABLE.actions) {
    it(`${entry.action}: argument count, stdin, secret file and usage line`, () => {
      const sh = shBranch(entry.action);
      const ps = psBranch(entry.action);
      const [min, max] = entry.argc;
      if (min === max) expect(sh).toContain(`[[ $# -eq ${min} ]]`);
      else if (min === 0) expect(sh).toContain(`[[ $# -le ${max} ]]`);
      else expect(sh).toContain(`[[ $# -ge ${min} && $# -le ${max} ]]`);
      expect(ps).toMatch(new RegExp(`Assert-Count ${min} ${max} `));
      // Actions sharing a branch print their own name as the usage line.
      if (sh.includes('usage: svc-auth.sh $action')) {
        expect(entry.usage).toBe(entry.action);
        expect(ps).toContain(`Assert-Count ${min} ${max} $Action`);
      } else {
        expect(sh).toContain(`usage: svc-auth.sh ${entry.usage}`);
        expect(ps).toContain(`Assert-Count ${min} ${max} '${entry.usage}'`);
      }
      if (entry.action !== 'admin-ui') {
        expect(sh.includes('</dev/null'), 'sh closes stdin unless the action reads it').toBe(!entry.stdin);
        expect(ps).toContain(`$${entry.stdin ? 'true' : 'false'}`);
      }
      if (entry.secret_file === null) {
        expect(sh).not.toContain('check_secret');
        expect(ps).not.toContain('Test-Secret');
      } else {
        expect(sh).toContain(`check_secret "$secrets_dir/${entry.secret_file}"`);
        expect(ps).toContain(`Test-Secret (Join-Path $SecretsDir '${entry.secret_file}')`);
      }
    });
  }

  it('carry the table messages (with each script name) and the Windows note in the .ps1', () => {
    const fixed = (template: string): string[] => template.split(/\{[a-z]+\}/).filter((part) => part !== '');
    for (const [key, template] of Object.entries(TABLE.messages)) {
      if (key === 'windows_memory_store') {
        expect(PS1).toContain(template);
        continue;
      }
      for (const [name, text] of [
        ['sh', SH],
        ['ps1', PS1],
      ] as const)
        for (const part of fixed(template.replace('{ext}', name)))
          expect(text, `${key} in .${name}`).toContain(part);
    }
  });

  it('svc-auth.sh refuses wrong argument counts with exactly the table usage, and unknown actions', async () => {
    const home = await mkdtemp(join(tmpdir(), 'svc-auth-usage-'));
    try {
      const refuse = async (args: string[]): Promise<{ code: number; stderr: string }> =>
        run('bash', [join(SCRIPTS, 'svc-auth.sh'), ...args], {
          env: { PATH: process.env['PATH'], SVC_HOME: home },
        }).then(
          () => ({ code: 0, stderr: '' }),
          (error: { code: number; stderr: string }) => error,
        );
      for (const entry of TABLE.actions) {
        const tooMany = Array.from({ length: entry.argc[1] + 1 }, (_, i) => `arg${i}`);
        const refused = await refuse([entry.action, ...tooMany]);
        expect(refused.code, entry.action).toBe(2);
        expect(refused.stderr).toBe(`svc-auth: usage: svc-auth.sh ${entry.usage}\n`);
      }
      const unknown = await refuse(['explode']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe(
        `svc-auth: ${TABLE.messages['unknown_action']!.replace('{action}', 'explode').replace('{ext}', 'sh')}\n`,
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

// The repository states its own contract: no tracked file links to or reads the session's shared
// folder beside the checkout (a user's clone has none). The pattern is built from pieces so that
// this file does not match itself.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@svc/daemon/spec';

const SHARED = new RegExp(['\\.\\./', 'shared', '|/work/', 'shared', '|/work/', 'ref/'].join(''));

describe('the repository is self-contained', () => {
  it('no tracked file refers to the shared folder or the reference copies outside the checkout', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((f) => f !== '' && !/\.(png|jpg|ico|woff2?|gz|tgz)$/.test(f));
    const offenders: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(`${REPO_ROOT}${file}`, 'utf8');
      } catch {
        continue; // deleted in the work tree
      }
      if (SHARED.test(text)) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });
});

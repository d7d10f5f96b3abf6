// Keeps spec/ and the generated sections of docs/reference.md in step with the registries in
// @svc/protocol and the daemon's operation table: regenerates everything in memory and compares.
// (A docs/reference.md that lost a marker pair fails while collecting, naming the marker.)
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, buildAllGenerated, readRepoFile } from '@svc/daemon/spec';

const HINT = 'generated file is stale: run npm run gen:spec';

describe('spec/ and docs/reference.md are generated from the sources', async () => {
  const generated = await buildAllGenerated();

  it.each([...generated.keys()])('%s is up to date', (path) => {
    const onDisk = readRepoFile(path);
    expect(onDisk, `${path} is missing: run npm run gen:spec`).toBeDefined();
    // Compare line by line first so that a failure shows the differing lines, not 180 KB.
    expect(onDisk?.split('\n'), `${path}: ${HINT}`).toEqual(generated.get(path)?.split('\n'));
  });

  it('spec/ holds no JSON file that the generator does not write', () => {
    // Hand-written JSON, each with the test that keeps it true.
    const handWritten = new Set([
      'spec/testkit.schema.json', // the line svc-testkit prints: packages/testkit/test/serve.test.ts
    ]);
    const stray = readdirSync(`${REPO_ROOT}spec`)
      .filter((name) => name.endsWith('.json'))
      .map((name) => `spec/${name}`)
      .filter((path) => !generated.has(path) && !handWritten.has(path));
    expect(stray, 'remove these or generate them from gen-spec.ts').toEqual([]);
  });
});

// npm run gen:spec: writes spec/*.json and the generated sections of docs/reference.md from the
// registries in @svc/protocol and the daemon's operation table.
//   node packages/daemon/scripts/gen-spec.ts          write the files
//   node packages/daemon/scripts/gen-spec.ts --check  write nothing; exit 1 when a file is stale

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { REPO_ROOT, buildAllGenerated, readRepoFile } from './spec-files.ts';

const check = process.argv.includes('--check');
const stale: string[] = [];

for (const [path, content] of await buildAllGenerated()) {
  if (readRepoFile(path) === content) continue;
  stale.push(path);
  if (!check) {
    mkdirSync(dirname(`${REPO_ROOT}${path}`), { recursive: true });
    writeFileSync(`${REPO_ROOT}${path}`, content);
  }
}

if (check) {
  if (stale.length > 0) {
    console.error(`stale generated files (run npm run gen:spec):\n  ${stale.join('\n  ')}`);
    process.exitCode = 1;
  }
} else {
  console.log(stale.length === 0 ? 'spec: up to date' : `spec: wrote\n  ${stale.join('\n  ')}`);
}

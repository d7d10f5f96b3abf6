#!/usr/bin/env node
// svc-testkit launcher (npm bin of the private testkit package): `svc-testkit serve --json` starts a
// real svcd for test suites in any language (spec/testkit.md).
import process from 'node:process';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `svc-testkit: needs Node.js 24 (this is ${process.version}); run it with \`npx svc-testkit\` in the repository\n`,
  );
  process.exit(2);
}
const [command, ...args] = process.argv.slice(2);
if (command !== 'serve') {
  process.stderr.write('usage: svc-testkit serve [--json] [--agent] [--builtin] [--token-ttl SECONDS]\n');
  process.exit(2);
}
const { serve } = await import('../src/serve.ts');
process.exitCode = await serve(args);

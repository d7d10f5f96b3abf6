#!/usr/bin/env node
// svc launcher (npm bin): runs the TypeScript sources with Node 24's type stripping.
import process from 'node:process';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `svc: needs Node.js 24 (this is ${process.version}); run it with \`npx svc\` in the repository\n`,
  );
  process.exit(2);
}
const { main } = await import('../src/main.ts');
process.exitCode = await main(process.argv.slice(2));

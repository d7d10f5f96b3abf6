// Loaded into svcd by bench/memory-breakdown.ts (NODE_OPTIONS=--import=<this file>): on SIGUSR2 it
// writes the process's own view of its memory (V8 heap spaces, code statistics, loaded builtin
// modules, active handles) as JSON to MEMORY_PROBE_OUT, after a full GC when one is exposed, then a
// heap snapshot to `<out>.heapsnapshot` when `<out>.snapshot-wanted` exists, then an empty `<out>.done`.
// Plain JavaScript: it runs inside the bundle's process, which has no type stripper.
// Builtins through `require`, loaded when the signal comes, so that the probe itself loads nothing
// into svcd before the first report (an ES import of node:process would create stdin).
import { createRequire } from 'node:module';
/* global process -- the global, not an ES import of node:process */

const require = createRequire(import.meta.url);

// V8 flags to try (bench/memory-breakdown.ts --v8-flags), set before the bundle is loaded: Node
// refuses most V8 flags in NODE_OPTIONS.
if (process.env['MEMORY_PROBE_V8_FLAGS'])
  require('node:v8').setFlagsFromString(process.env['MEMORY_PROBE_V8_FLAGS']);

process.on('SIGUSR2', () => {
  const out = process.env['MEMORY_PROBE_OUT'];
  if (out === undefined) return;
  const { existsSync, writeFileSync } = require('node:fs');
  const v8 = require('node:v8');
  if (typeof globalThis.gc === 'function') globalThis.gc();
  const report = {
    memoryUsage: process.memoryUsage(),
    heap: v8.getHeapStatistics(),
    spaces: v8.getHeapSpaceStatistics(),
    code: v8.getHeapCodeStatistics(),
    builtinModules: process.moduleLoadList
      .filter((m) => m.startsWith('NativeModule '))
      .map((m) => m.slice(13)),
    handles: process.getActiveResourcesInfo(),
  };
  writeFileSync(out, JSON.stringify(report));
  if (existsSync(`${out}.snapshot-wanted`)) v8.writeHeapSnapshot(`${out}.heapsnapshot`);
  writeFileSync(`${out}.done`, '');
});

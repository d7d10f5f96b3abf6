// The fallback spawn path stays covered: the crash-safety suite again with SVC_SPAWNER=inprocess
// (every test daemon spawns with Node's child_process, as where svc-spawner cannot be built).
process.env['SVC_SPAWNER'] = 'inprocess';
await import('./crash-safety.test.ts');

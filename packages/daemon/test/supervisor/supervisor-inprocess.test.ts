// The fallback spawn path stays covered: the supervisor suite again, with SVC_SPAWNER=inprocess
// (Node's child_process in svcd, as where svc-spawner cannot be built). supervisor.test.ts runs it
// on the default path (svc-spawner where it builds).
process.env['SVC_SPAWNER'] = 'inprocess';
await import('./supervisor.test.ts');

const { describe, expect, it } = await import('vitest');
const { fixture } = await import('./helpers.ts');
describe('SVC_SPAWNER=inprocess', () => {
  it('spawns in-process and says why', async () => {
    const f = await fixture();
    try {
      expect(f.sup.spawner()).toEqual({ kind: 'inprocess', pid: undefined, reason: 'SVC_SPAWNER=inprocess' });
    } finally {
      await f.cleanup();
    }
  });
});

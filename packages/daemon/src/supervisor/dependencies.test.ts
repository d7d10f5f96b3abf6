import { describe, expect, it } from 'vitest';
import type { DependencyState } from './dependencies.ts';
import { findDependencyCycle, unmetDependencies } from './dependencies.ts';

const ready: DependencyState = { enabled: true, running: true, health: 0 };

describe('unmetDependencies', () => {
  const apps: Record<string, DependencyState> = {
    db: ready,
    cache: { ...ready, running: false },
    queue: { ...ready, enabled: false },
    sick: { ...ready, health: 1 },
  };
  const lookup = (name: string): DependencyState | undefined => apps[name];

  it('is empty when every dependency is registered, enabled, running and healthy', () => {
    expect(unmetDependencies([], lookup)).toEqual([]);
    expect(unmetDependencies(['db'], lookup)).toEqual([]);
  });

  it('lists, in declared order, what is missing, disabled, stopped or unhealthy', () => {
    expect(unmetDependencies(['sick', 'db', 'ghost', 'queue', 'cache'], lookup)).toEqual([
      'sick',
      'ghost',
      'queue',
      'cache',
    ]);
  });
});

describe('findDependencyCycle', () => {
  const graph: Record<string, string[]> = { a: ['b'], b: ['c'], c: [], d: ['a', 'c'] };
  const edges = (name: string): string[] | undefined => graph[name];

  it('accepts an acyclic graph and names not registered yet', () => {
    expect(findDependencyCycle('e', ['a', 'd', 'later'], edges)).toBeUndefined();
    expect(findDependencyCycle('c', [], edges)).toBeUndefined();
  });

  it('finds a self dependency', () => {
    expect(findDependencyCycle('x', ['x'], edges)).toEqual(['x', 'x']);
  });

  it('finds a cycle closed by a replacement', () => {
    // c -> a -> b -> c
    expect(findDependencyCycle('c', ['a'], edges)).toEqual(['c', 'a', 'b', 'c']);
    // c -> d -> a -> b -> c, found through either branch
    const cycle = findDependencyCycle('c', ['d'], edges);
    expect(cycle?.[0]).toBe('c');
    expect(cycle?.at(-1)).toBe('c');
  });

  it('terminates on a large graph with shared dependencies', () => {
    const big: Record<string, string[]> = {};
    for (let i = 0; i < 2000; i++) big[`n${i}`] = [`n${i + 1}`, `n${i + 2}`];
    expect(findDependencyCycle('root', ['n0'], (name) => big[name])).toBeUndefined();
    expect(findDependencyCycle('n2001', ['n0'], (name) => big[name])).toEqual(
      expect.arrayContaining(['n2001', 'n0']),
    );
  });
});

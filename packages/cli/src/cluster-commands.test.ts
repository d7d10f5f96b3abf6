import { describe, expect, it } from 'vitest';
import { clusterTask } from './cluster-commands.ts';

describe('svc cluster add: the task file', () => {
  it('takes the name from the file or the content and fills the defaults', () => {
    expect(clusterTask('name: web\ncontent:\n  command: sleep 1\n', 'f')).toEqual({
      name: 'web',
      task: { replication: 1, port: 0, memoryMB: 0, condition: {}, content: { command: 'sleep 1' } },
    });
    const json = clusterTask(
      '{"replication": 3, "port": 8080, "content": {"name": "api", "command": "x"}}',
      'f',
    );
    expect(json.name).toBe('api');
    expect(json.task).toMatchObject({ replication: 3, port: 8080 });
  });

  it.each([
    ['not YAML', '{: [', /not valid YAML/],
    ['a list', '- a\n- b\n', /one cluster task/],
    ['a scalar', 'hello', /one cluster task/],
    ['no content', 'replication: 1\n', /content .* is required/],
    ['content not a mapping', 'content: sleep\n', /content .* is required/],
    ['an unknown field', 'content: {command: x}\nreplicas: 2\n', /unknown field "replicas"/],
  ])('refuses %s', (_label, text, message) => {
    expect(() => clusterTask(text, 'task.yaml')).toThrow(message);
  });
});

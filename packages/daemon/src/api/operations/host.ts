// Host operations: labels, writable configuration, resources.
import { cpus, freemem, loadavg, totalmem, uptime } from 'node:os';
import { statfs } from 'node:fs/promises';
import { SvcError } from '@svc/protocol';
import { json, parseJsonBody } from '../responses.ts';
import type { Services } from '../services.ts';
import type { Operation } from '../types.ts';

export const hostOperations: Operation<Services>[] = [
  {
    id: 'listLabels',
    method: 'GET',
    path: '/svc/labels',
    access: { kind: 'permission', permission: 'label-view' },
    summary: 'Host labels',
    async handle(context) {
      return json(context.services.hostConfig.labels);
    },
  },
  {
    id: 'setLabel',
    method: 'PUT',
    path: '/svc/label/{key}',
    access: { kind: 'permission', permission: 'label-set' },
    summary: 'Set a host label',
    query: [{ name: 'value', description: 'label value', required: true }],
    async handle(context) {
      const value = context.request.query['value'];
      if (value === undefined) throw new SvcError('invalid_query', 'value: required');
      return json(await context.services.hostConfig.setLabel(context.params['key']!, value));
    },
  },
  {
    id: 'deleteLabel',
    method: 'DELETE',
    path: '/svc/label/{key}',
    access: { kind: 'permission', permission: 'label-delete' },
    summary: 'Delete a host label',
    async handle(context) {
      return json(await context.services.hostConfig.deleteLabel(context.params['key']!));
    },
  },
  {
    id: 'getConfig',
    method: 'GET',
    path: '/svc/config',
    access: { kind: 'permission', permission: 'config-view' },
    summary: 'The configuration the daemon runs with: sections BaseConfig, REST, Auth, Registry, Labels',
    async handle(context) {
      return json(context.services.hostConfig.view());
    },
  },
  {
    id: 'updateConfig',
    method: 'POST',
    path: '/svc/config',
    access: { kind: 'permission', permission: 'config-set' },
    summary:
      'Merge a partial sectioned configuration; returns the whole plus restart_required (accepted keys that apply at the next start)',
    jsonBody: true,
    async handle(context) {
      const result = await context.services.hostConfig.update(parseJsonBody(context.request.body));
      context.services.logger.info('configuration changed', {
        principal: context.principal!.id,
        restart_required: result.restart_required,
      });
      return json(result);
    },
  },
  {
    id: 'getResources',
    method: 'GET',
    path: '/svc/resources',
    access: { kind: 'permission', permission: 'host-resource-view' },
    summary: 'CPU, memory, load and disks of the host',
    async handle(context) {
      const disks: Record<string, unknown>[] = [];
      for (const mount of ['/', context.services.config.workDir]) {
        try {
          const fs = await statfs(mount);
          disks.push({
            path: mount,
            total_bytes: fs.blocks * fs.bsize,
            free_bytes: fs.bavail * fs.bsize,
          });
        } catch {
          // a mount that cannot be read is left out rather than failing the whole report
        }
      }
      const cpuList = cpus();
      return json({
        host_name: context.services.config.hostName,
        cpu_cores: cpuList.length,
        cpu_model: cpuList[0]?.model ?? 'unknown',
        mem_total_bytes: totalmem(),
        mem_free_bytes: freemem(),
        load_average: loadavg(),
        uptime_seconds: Math.round(uptime()),
        disks,
      });
    },
  },
];

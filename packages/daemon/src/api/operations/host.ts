// Host operations: labels, writable configuration, resources.
import { cpus, freemem, loadavg, totalmem, uptime } from 'node:os';
import { statfs } from 'node:fs/promises';
import * as z from 'zod';
import { configProblem } from '@svc/platform/config';
import { json } from '../responses.ts';
import { Config, ConfigUpdate, ConfigUpdated, Labels, Resources } from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';
import { requiredParam } from './query.ts';

const labelQuery = z.object({ value: requiredParam('value', 'label value') });
const labels = [{ status: 200, description: 'all labels', json: Labels }] as const;

export const hostOperations: Operation<Services>[] = [
  defineOperation<Services>({
    id: 'listLabels',
    method: 'GET',
    path: '/svc/labels',
    access: { kind: 'permission', permission: 'label-view' },
    summary: 'Host labels',
    responses: labels,
    async handle(context) {
      return json(context.services.hostConfig.labels);
    },
  }),
  defineOperation<Services, typeof labelQuery>({
    id: 'setLabel',
    method: 'PUT',
    path: '/svc/label/{key}',
    access: { kind: 'permission', permission: 'label-set' },
    summary: 'Set a host label',
    query: labelQuery,
    responses: labels,
    async handle(context) {
      return json(
        await context.services.hostConfig.setLabel(context.params['key']!, context.input.query.value),
      );
    },
  }),
  defineOperation<Services>({
    id: 'deleteLabel',
    method: 'DELETE',
    path: '/svc/label/{key}',
    access: { kind: 'permission', permission: 'label-delete' },
    summary: 'Delete a host label',
    responses: labels,
    async handle(context) {
      return json(await context.services.hostConfig.deleteLabel(context.params['key']!));
    },
  }),
  defineOperation<Services>({
    id: 'getConfig',
    method: 'GET',
    path: '/svc/config',
    access: { kind: 'permission', permission: 'config-view' },
    summary: 'The configuration the daemon runs with: sections BaseConfig, REST, Auth, Registry, Labels',
    responses: [{ status: 200, description: 'the configuration', json: Config }],
    async handle(context) {
      return json(context.services.hostConfig.view());
    },
  }),
  defineOperation<Services, z.ZodType<Record<string, never>>, typeof ConfigUpdate>({
    id: 'updateConfig',
    method: 'POST',
    path: '/svc/config',
    access: { kind: 'permission', permission: 'config-set' },
    summary:
      'Merge a partial sectioned configuration; returns the whole plus restart_required (accepted keys that apply at the next start)',
    body: { kind: 'json', schema: ConfigUpdate, describeIssues: configProblem },
    responses: [{ status: 200, description: 'the configuration', json: ConfigUpdated }],
    async handle(context) {
      const result = await context.services.hostConfig.update(context.input.body);
      context.services.logger.info('configuration changed', {
        principal: context.principal!.id,
        restart_required: result.restart_required,
      });
      return json(result);
    },
  }),
  defineOperation<Services>({
    id: 'getResources',
    method: 'GET',
    path: '/svc/resources',
    access: { kind: 'permission', permission: 'host-resource-view' },
    summary: 'CPU, memory, load and disks of the host',
    responses: [{ status: 200, description: 'the resources', json: Resources }],
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
      const spawner = context.services.supervisor.spawner();
      return json({
        host_name: context.services.config.hostName,
        cpu_cores: cpuList.length,
        cpu_model: cpuList[0]?.model ?? 'unknown',
        mem_total_bytes: totalmem(),
        mem_free_bytes: freemem(),
        load_average: loadavg(),
        uptime_seconds: Math.round(uptime()),
        disks,
        process_spawner: {
          kind: spawner.kind,
          ...(spawner.pid === undefined ? {} : { pid: spawner.pid }),
          ...(spawner.reason === undefined ? {} : { reason: spawner.reason }),
        },
      });
    },
  }),
];

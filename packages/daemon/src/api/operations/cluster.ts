// Cluster operations (spec/contract.md §5 cluster rows, §9): cluster tasks defined once for the whole
// cluster, the node reports and the topology. They read and write the registry (cluster/cluster-api.ts);
// a stand-alone daemon answers 404 `not_found` saying cluster mode is off.
import { SvcError } from '@svc/protocol';
import type * as z from 'zod';
import type { ClusterApi } from '../../cluster/cluster-api.ts';
import { parseAppDefinition } from '../../model/app-definition.ts';
import { json } from '../responses.ts';
import {
  AppRemoved,
  ClusterNodeMap,
  ClusterTask,
  ClusterTaskMap,
  ClusterTaskView,
  ClusterTopology,
} from '../schemas.ts';
import type { Services } from '../services.ts';
import { defineOperation, type Operation } from '../types.ts';
import { LIMITS } from '../../model/app-definition.ts';

/** A task is one registry value: well under etcd's request limit (1.5 MiB by default). */
export const MAX_TASK_BYTES = 256 * 1024;

function clusterOf(services: Services): ClusterApi {
  if (services.clusterApi === undefined)
    throw new SvcError(
      'not_found',
      'cluster mode is off on this node: set SVC_REGISTRY_URL (or Registry.Url) to use /svc/cluster/*',
    );
  return services.clusterApi;
}

const taskNotFound = (name: string): SvcError =>
  new SvcError('app_not_found', `no cluster application named ${name}`);

/**
 * The task as stored: its content validated as an application definition (so a bad one is refused
 * here, not on every worker), named like the path, and owned by the caller (`owner`: the workers run
 * it as that principal's execution user).
 */
function storedTask(
  name: string,
  body: z.infer<typeof ClusterTask>,
  owner: string,
): z.infer<typeof ClusterTask> {
  const contentName = body.content['name'];
  if (contentName !== undefined && contentName !== name)
    throw new SvcError(
      'invalid_app',
      `content.name: ${JSON.stringify(contentName).slice(0, 130)} does not match the path name "${name}"`,
    );
  const content: Record<string, unknown> = { ...body.content, name, owner };
  if (content['pid'] !== undefined)
    throw new SvcError(
      'invalid_app',
      'content.pid: a cluster application cannot adopt a process of one node',
    );
  try {
    parseAppDefinition(content, { now: Date.now() });
  } catch (error) {
    if (error instanceof SvcError) throw new SvcError('invalid_app', `content: ${error.message}`);
    throw error;
  }
  const task = { ...body, content };
  if (Buffer.byteLength(JSON.stringify(task)) > MAX_TASK_BYTES)
    throw new SvcError('payload_too_large', `a cluster task is at most ${MAX_TASK_BYTES} bytes of JSON`);
  return task;
}

const view = { kind: 'permission', permission: 'app-view-all' } as const;

export const clusterOperations: Operation<Services>[] = [
  defineOperation<Services>({
    id: 'listClusterApplications',
    method: 'GET',
    path: '/svc/cluster/applications',
    access: view,
    summary: 'Every cluster task by name, with where it runs now (placements)',
    responses: [{ status: 200, description: 'the cluster tasks', json: ClusterTaskMap }],
    async handle({ services }) {
      return json(await clusterOf(services).tasks());
    },
  }),
  defineOperation<Services>({
    id: 'getClusterApplication',
    method: 'GET',
    path: '/svc/cluster/app/{name}',
    access: view,
    summary: 'One cluster task, with where it runs now',
    responses: [{ status: 200, description: 'the cluster task', json: ClusterTaskView }],
    async handle({ params, services }) {
      const name = params['name']!;
      const task = await clusterOf(services).task(name);
      if (task === undefined) throw taskNotFound(name);
      return json(task);
    },
  }),
  defineOperation<Services, z.ZodType<Record<string, never>>, typeof ClusterTask>({
    id: 'putClusterApplication',
    method: 'PUT',
    path: '/svc/cluster/app/{name}',
    access: { kind: 'permission', permission: 'app-reg' },
    summary: 'Define or replace a cluster task; the leader places its replicas on fitting worker nodes',
    body: { kind: 'json', schema: ClusterTask, errorCode: 'invalid_app', maxBytes: LIMITS.definitionBodyBytes },
    responses: [
      { status: 200, description: 'the stored task (placements as of now)', json: ClusterTaskView },
    ],
    async handle({ params, input, principal, services }) {
      const name = params['name']!;
      const cluster = clusterOf(services);
      const task = storedTask(name, input.body, principal!.id);
      await cluster.putTask(name, task);
      return json((await cluster.task(name)) ?? { ...task, placements: [] });
    },
  }),
  defineOperation<Services>({
    id: 'deleteClusterApplication',
    method: 'DELETE',
    path: '/svc/cluster/app/{name}',
    access: { kind: 'permission', permission: 'app-reg', also: ['app-delete'] },
    summary: 'Remove a cluster task; its replicas stop once the leader has withdrawn them',
    responses: [{ status: 200, description: 'removed', json: AppRemoved }],
    async handle({ params, services }) {
      const name = params['name']!;
      if (!(await clusterOf(services).deleteTask(name))) throw taskNotFound(name);
      return json({ name, removed: true });
    },
  }),
  defineOperation<Services>({
    id: 'listClusterNodes',
    method: 'GET',
    path: '/svc/cluster/nodes',
    access: { kind: 'permission', permission: 'host-resource-view' },
    summary: 'The node reports of every registered node, by host name',
    responses: [{ status: 200, description: 'the node reports', json: ClusterNodeMap }],
    async handle({ services }) {
      return json(await clusterOf(services).nodes());
    },
  }),
  defineOperation<Services>({
    id: 'getClusterTopology',
    method: 'GET',
    path: '/svc/cluster/topology',
    access: view,
    summary: "The leader's schedule: host name -> the entries placed there",
    responses: [{ status: 200, description: 'the topology', json: ClusterTopology }],
    async handle({ services }) {
      return json(await clusterOf(services).topology());
    },
  }),
];

// The node report (spec "Cluster registry records"): what a node says about itself under
// `svc/cluster/nodes/<host_name>` on its session lease. Pure apart from `hostFacts()`, which reads
// the machine once per call.
import { readFileSync } from 'node:fs';
import { availableParallelism, machine, release, totalmem, type as osType } from 'node:os';
import type { NodeReport } from './records.ts';

/** Label names the node sets itself; a configured label of the same name is overridden. */
export const SYSTEM_LABELS = ['HOST_NAME', 'arch', 'os_version', 'WORKER'] as const;

export interface HostFacts {
  arch: string;
  osVersion: string;
  cpuCores: number;
  memTotalBytes: number;
}

function osVersion(): string {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text)?.[1];
    if (pretty) return pretty;
  } catch {
    // no os-release: the kernel's name and release below
  }
  return `${osType()} ${release()}`;
}

/** The machine as the report describes it (`arch` is `uname -m`, e.g. x86_64). */
export function hostFacts(): HostFacts {
  return {
    arch: machine(),
    osVersion: osVersion(),
    cpuCores: availableParallelism(),
    memTotalBytes: totalmem(),
  };
}

export interface NodeReportInput {
  svcUrl: string;
  hostName: string;
  isWorkerNode: boolean;
  leader: boolean;
  labels: Readonly<Record<string, string>>;
  facts: HostFacts;
}

export function nodeReport(input: NodeReportInput): NodeReport {
  return {
    svc: input.svcUrl,
    label: {
      ...input.labels,
      HOST_NAME: input.hostName,
      arch: input.facts.arch,
      os_version: input.facts.osVersion,
      WORKER: input.isWorkerNode ? 'true' : 'false',
    },
    leader: input.leader,
    resource: { cpu_cores: input.facts.cpuCores, mem_total_bytes: input.facts.memTotalBytes },
  };
}

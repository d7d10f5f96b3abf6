// Forwarding (X-Target-Host) assembled from the daemon's configuration. The returned targets are
// the hook for cluster mode: `forwarder.targets.addProvider(registeredNodes)`.
import { readFile } from 'node:fs/promises';
import type { DaemonConfig } from '@svc/platform/config';
import type { Logger } from '../log/logger.ts';
import type { TlsMaterial } from '@svc/platform/tls';
import { Forwarder } from './forwarder.ts';
import { AllowedTargets, staticTargets } from './targets.ts';

export { Forwarder } from './forwarder.ts';
export { AllowedTargets, type ForwardTargetProvider } from './targets.ts';

export async function createForwarder(options: {
  config: DaemonConfig;
  tls: TlsMaterial;
  tcpPort: () => number;
  logger: Logger;
}): Promise<Forwarder> {
  const { config, tls } = options;
  // Target certificates are verified against this daemon's CA (work/ssl/ca.pem or tls.ca_file)
  // plus the optional forward CA file; verification is never turned off.
  const ca: string[] = [];
  if (tls.ca !== undefined) ca.push(tls.ca);
  if (config.forwardCaFile !== undefined) ca.push(await readFile(config.forwardCaFile, 'utf8'));
  if (ca.length === 0) ca.push(tls.cert); // a configured self-signed certificate without ca_file
  return new Forwarder({
    targets: new AllowedTargets([staticTargets(() => config.forwardTargets)]),
    self: { hostName: config.hostName, listenAddress: config.listenAddress, tcpPort: options.tcpPort },
    ca,
    logger: options.logger.child({ component: 'forwarding' }),
  });
}

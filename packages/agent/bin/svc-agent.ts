// svc-agent: the front door of svc (CONTRACT §1), run by svcd as the system application `agent`
// (apps/agent.yaml) in both auth modes with the daemon's SVC_* settings, SVC_DAEMON_URL and its own
// SVC_PROCESS_KEY. The entry point of the bundle dist/svc-agent.mjs (built with svcd's bundle by
// packages/platform/build/build.js), run by the launcher bin/svc-agent.js.
//   HTTPS    SVC_LISTEN_ADDRESS:SVC_AGENT_PORT (6060), the daemon's certificate
//   metrics  SVC_LISTEN_ADDRESS:SVC_METRICS_PORT (off unless set; 6061 by convention)
// Bound ports go to work/ports.agent.json, which svcd merges into work/ports.json.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readRelayKey } from '@svc/identity';
import { writeFileAtomic } from '@svc/platform/atomic-file';
import { INSTALL_ROOT, loadConfig, PortsFile } from '@svc/platform/config';
import { loadTlsMaterial } from '@svc/platform/tls';
import { startAgent, type Log } from '../src/agent.ts';

const log: Log = (level, message, fields = {}) => {
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }) + '\n');
};

try {
  const config = await loadConfig(process.env);
  const given = process.env['SVC_DAEMON_URL'];
  if (given === undefined || !URL.canParse(given))
    throw new Error('SVC_DAEMON_URL is not set: svc-agent is started by svcd (apps/agent.yaml)');
  // A daemon listening on every address (0.0.0.0, ::; the container image) is reached on loopback,
  // which the generated certificate names (an IP SAN for 127.0.0.1 and ::1).
  const upstream = new URL(given);
  if (upstream.hostname === '0.0.0.0') upstream.hostname = '127.0.0.1';
  else if (upstream.hostname === '[::]') upstream.hostname = '[::1]';
  const daemonUrl = upstream.origin;
  const tls = await loadTlsMaterial({
    workDir: config.workDir,
    hostName: config.hostName,
    configured: config.tls,
  });
  const issuer = new URL(config.oidcIssuer);
  const issuerOrigin =
    config.authMode !== 'builtin'
      ? undefined
      : issuer.port !== '0'
        ? () => Promise.resolve(issuer.origin)
        : // An ephemeral issuer port (tests) is known from work/ports.json once svc-identity reported it.
          async () => {
            const port = await PortsFile.read(config.workDir).then(
              (ports) => ports.issuer,
              () => undefined,
            );
            return port === undefined ? undefined : `${issuer.protocol}//${issuer.hostname}:${port}`;
          };
  const agent = await startAgent({
    listenAddress: config.listenAddress,
    port: config.agentPort,
    metricsPort: config.metricsPort,
    tls,
    daemonUrl,
    daemonLink: process.env['SVC_AGENT_LINK'] || undefined,
    issuerOrigin,
    processKey: process.env['SVC_PROCESS_KEY'],
    issuerRelayKey: config.authMode === 'builtin' ? () => readRelayKey(config.workDir) : undefined,
    limits: config.limits,
    webRoot: join(INSTALL_ROOT, 'packages', 'web', 'dist'),
    log,
  });
  const portsFile = join(config.workDir, 'ports.agent.json');
  await writeFileAtomic(portsFile, JSON.stringify(agent.ports, null, 2) + '\n', { mode: 0o644 });
  log('info', 'svc-agent listening', { ...agent.ports, daemon: daemonUrl, auth_mode: config.authMode });
  const stop = (signal: string): void => {
    log('info', 'svc-agent stopping', { signal });
    void Promise.all([agent.close(), rm(portsFile, { force: true })]).then(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
} catch (error) {
  process.stderr.write(
    `svc-agent: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
}

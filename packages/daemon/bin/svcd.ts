// svcd: the svc daemon. Configuration: config/config.yaml, work/config/config.yaml, SVC_* variables.
// The entry point of the bundle (packages/platform/build/build.js → packages/platform/dist/svcd.mjs),
// run by the launcher bin/svcd.js.
import { ConfigError, loadConfig } from '@svc/platform/config';
import { startDaemon } from '../src/daemon.ts';

try {
  const config = await loadConfig();
  const daemon = await startDaemon(config, {
    logToStderr: process.stderr.isTTY || process.env['SVC_LOG_STDERR'] === '1',
  });
  process.stdout.write(
    `svcd listening: REST/WSS https://${config.listenAddress}:${daemon.ports.rest}  TCP ${config.listenAddress}:${daemon.ports.tcp}  (home ${config.home})\n`,
  );
  const stop = (signal: string): void => {
    daemon.logger.info('signal received', { signal });
    daemon.close().then(
      () => {
        process.stderr.write(
          `svcd stopped. Managed processes and system applications (identity provider, agent, admin UI) keep running; the next svcd re-attaches to them.\n` +
            `To stop svcd and everything it supervises: SVC_HOME=${config.home} npx svc daemon stop --all\n`,
        );
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(
          `svcd: shutdown failed: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
} catch (error) {
  const message =
    error instanceof ConfigError ? error.message : error instanceof Error ? error.message : String(error);
  process.stderr.write(`svcd: cannot start: ${message}\n`);
  process.exit(1);
}

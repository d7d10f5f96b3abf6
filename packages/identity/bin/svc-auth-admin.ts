// svc-auth-admin: the administration UI, run by the daemon as the system application `authadmin`
// (apps/authadmin.yaml). See src/admin/program.ts for its settings; SVC_AUTH_ADMIN_UI=off makes it
// idle (no listener) until SIGTERM so that the system app stays up for health checks.
import { join, resolve } from 'node:path';
import { runAdminUiProgram } from '../src/admin/program.ts';
import { INSTALL_ROOT } from '@svc/platform/config';

/** SVC_HOME, else the installation root (the repository root). */
const home = resolve(process.env['SVC_HOME'] || INSTALL_ROOT);

try {
  const program = await runAdminUiProgram({
    workDir: join(home, 'work'),
    env: process.env,
    log: (line) => process.stdout.write(line + '\n'),
  });
  // Disabled: nothing keeps the event loop alive, so hold it open until a signal.
  const idle = program.ui === undefined ? setInterval(() => {}, 2 ** 31 - 1) : undefined;
  const stop = (): void => {
    if (idle !== undefined) clearInterval(idle);
    void program.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (error) {
  process.stderr.write(
    `svc-auth-admin: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
}

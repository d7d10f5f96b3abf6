// health_check_cmd (health.ts): checked while the process runs, as the app's execution user and
// with the app's environment; the result is reported to the lifecycle (HEALTH on a change).
import type { OsIdentity } from '../../privilege/os-user.ts';
import type { HealthChecker } from '../health.ts';
import type { AppLifecycle } from '../lifecycle.ts';
import type { AppEnvironment } from './environment.ts';
import type { LifecycleHook } from './hook.ts';
import type { ExecutionUsers } from './identity.ts';

export type HealthChecks = Pick<HealthChecker, 'track' | 'untrack' | 'close'>;

export class HealthHook implements LifecycleHook {
  readonly #checks: HealthChecks;
  readonly #users: ExecutionUsers;
  readonly #environment: AppEnvironment;

  constructor(checks: HealthChecks, users: ExecutionUsers, environment: AppEnvironment) {
    this.#checks = checks;
    this.#users = users;
    this.#environment = environment;
  }

  poststart(app: AppLifecycle): void {
    const command = app.def.health_check_cmd;
    if (command === undefined) return;
    let user: OsIdentity | undefined;
    try {
      user = this.#users.identityOf(app.def);
    } catch {
      // Vanished since the spawn: never run the check as the daemon's user instead. Unhealthy.
      app.reportHealth(1);
      return;
    }
    this.#checks.track({
      name: app.name,
      command,
      cwd: app.def.working_dir,
      env: this.#environment.of(app.def, user),
      user,
      report: (health) => app.reportHealth(health),
    });
  }

  exited(app: AppLifecycle): void {
    this.#checks.untrack(app.name);
  }

  removed(app: AppLifecycle): void {
    this.#checks.untrack(app.name);
  }

  detach(): void {
    this.#checks.close();
  }
}

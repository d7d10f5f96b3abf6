// The execution user of an app's processes: the OS user its owner's principal runs as (its
// `execution_user`, else BaseConfig.DefaultExecUser), asked at every start so that a change of the
// principal's record applies from the next start; system apps always run as the daemon's user.
// A user that does not exist on this host fails the start (never: the daemon's own user instead).
import { SvcError } from '@svc/protocol';
import type { AppDefinition } from '../../model/app-definition.ts';
import { lookupOsUser, type OsIdentity } from '../../privilege/os-user.ts';
import type { LifecycleHook, SpawnPreparation } from './hook.ts';
import type { AppLifecycle } from '../lifecycle.ts';

export class ExecutionUsers {
  readonly #userOf: (owner: string | undefined) => string | undefined;
  readonly #lookup: (name: string) => OsIdentity | undefined;
  readonly #daemonUid: () => number | undefined;

  /**
   * `userOf`: the OS user name the apps of a principal run as (undefined = the daemon's own user).
   * `lookup` and `daemonUid`: the user database and the daemon's uid (seams for unit tests).
   */
  constructor(
    userOf: ((owner: string | undefined) => string | undefined) | undefined,
    lookup: (name: string) => OsIdentity | undefined = lookupOsUser,
    daemonUid: () => number | undefined = () => process.getuid?.(),
  ) {
    this.#userOf = userOf ?? (() => undefined);
    this.#lookup = lookup;
    this.#daemonUid = daemonUid;
  }

  /** The execution user of an app's processes; throws (the start fails) for an unknown user. */
  identityOf(def: AppDefinition): OsIdentity | undefined {
    if (def.system) return undefined;
    const name = this.#userOf(def.owner_principal_id);
    if (name === undefined) return undefined;
    const identity = this.#lookup(name);
    if (identity === undefined) throw new Error(`execution user ${name} does not exist on this host`);
    return identity;
  }

  /** The uid the processes of `def`'s owner run as (its execution user; the daemon's own uid without one). */
  executionUid(def: AppDefinition): number | undefined {
    return this.#uidOf(def.owner_principal_id);
  }

  #uidOf(principal: string | undefined): number | undefined {
    const name = this.#userOf(principal);
    return name === undefined ? this.#daemonUid() : this.#lookup(name)?.uid;
  }

  /**
   * A replacement keeps the app's owner, so its processes run as the OWNER's execution user: a
   * caller allowed to change another principal's app (shared, or app-manage-all) may do so only
   * when it runs as that same user or as root, else it would run code as a user it is not.
   */
  refuseActingAsOwner(def: AppDefinition, caller: string): void {
    const callerUid = this.#uidOf(caller);
    const ownerUid = this.executionUid(def);
    if (callerUid === 0 || (callerUid !== undefined && callerUid === ownerUid)) return;
    throw new SvcError(
      'forbidden',
      `${def.name} belongs to another principal whose processes run as another OS user; replacing it would run your definition as that user`,
    );
  }
}

/** prestart: the spawn runs as the execution user (first: an unknown user fails the start before anything is opened). */
export class IdentityHook implements LifecycleHook {
  readonly #users: ExecutionUsers;

  constructor(users: ExecutionUsers) {
    this.#users = users;
  }

  prestart(app: AppLifecycle, spawn: SpawnPreparation): void {
    spawn.user = this.#users.identityOf(app.def);
  }
}

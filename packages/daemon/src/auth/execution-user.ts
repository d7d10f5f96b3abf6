// Which OS user a principal's applications, runs and file transfers execute as (CONTRACT §6):
// the principal record's `execution_user`, else BaseConfig.DefaultExecUser, else the daemon's own
// user; BaseConfig.DisableExecUser turns the whole mechanism off (everything runs as the daemon's
// user, so every holder of app-reg / app-run-* / file-* is then administrator-equivalent).

export interface ExecUserSettings {
  /** BaseConfig.DefaultExecUser. */
  readonly defaultExecUser: string | undefined;
  /** BaseConfig.DisableExecUser. */
  readonly disableExecUser: boolean;
}

/** The effective execution user name; undefined = the daemon's own user. */
export function effectiveExecutionUser(
  recordUser: string | undefined,
  settings: ExecUserSettings,
): string | undefined {
  if (settings.disableExecUser) return undefined;
  return recordUser ?? settings.defaultExecUser;
}

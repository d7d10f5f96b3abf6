#!/bin/sh
# Entrypoint of the svc container image (spec: "Administration UI", "Modes and configuration").
# - SVC_AUTH_ADMIN_UI=off rewrites the bundled apps/authadmin.yaml to `status: 0` (disabled)
#   before svcd starts; on (or unset) writes `status: 1` back, which is the only way to re-enable
#   it (a system application cannot be re-enabled through the REST API).
# - SVC_ADMIN_PASSWORD_FILE is checked for readability here and applied by svcd only while no
#   administrator credential exists (first start); there is no variable that carries a password.
# With arguments, runs them instead of svcd (debugging: `docker run … sh`).
set -eu
: "${SVC_HOME:=/opt/svc}"
export SVC_HOME

app="$SVC_HOME/apps/authadmin.yaml"
case "${SVC_AUTH_ADMIN_UI:-on}" in
  off | OFF | Off | false | 0) status=0 ;;
  on | ON | On | true | 1 | '') status=1 ;;
  *)
    echo "entrypoint: SVC_AUTH_ADMIN_UI must be on or off" >&2
    exit 2
    ;;
esac
if [ -f "$app" ]; then
  tmp="$(dirname "$app")/.authadmin.yaml.$$"
  grep -v '^status:' "$app" >"$tmp" || true
  printf 'status: %s\n' "$status" >>"$tmp"
  mv -f "$tmp" "$app"
fi

if [ -n "${SVC_ADMIN_PASSWORD_FILE:-}" ] && [ ! -r "$SVC_ADMIN_PASSWORD_FILE" ]; then
  echo "entrypoint: SVC_ADMIN_PASSWORD_FILE names a file that cannot be read" >&2
  exit 1
fi

if [ "$#" -gt 0 ]; then exec "$@"; fi
# The launcher's shebang flags do not apply to `node <launcher>`: pass them here.
exec node --max-semi-space-size=1 "$SVC_HOME/packages/daemon/bin/svcd.js"

#!/bin/sh
# Entrypoint of the svc container image (spec: "Administration UI", "Modes and configuration").
# - SVC_AUTH_ADMIN_UI=off rewrites the bundled apps/authadmin.yaml to `enabled: false` before
#   svcd starts; on (or unset) writes `enabled: true` back, which is the only way to re-enable
#   it (a system application cannot be re-enabled through the REST API).
# - SVC_ADMIN_PASSWORD_FILE is checked for readability here and applied by svcd only while no
#   administrator credential exists (first start); there is no variable that carries a password.
# With arguments, runs them instead of svcd (debugging: `docker run … sh`).
set -eu
: "${SVC_HOME:=/opt/svc}"
export SVC_HOME

app="$SVC_HOME/apps/authadmin.yaml"
case "${SVC_AUTH_ADMIN_UI:-on}" in
  off | OFF | Off | false | 0) enabled=false ;;
  on | ON | On | true | 1 | '') enabled=true ;;
  *)
    echo "entrypoint: SVC_AUTH_ADMIN_UI must be on or off" >&2
    exit 2
    ;;
esac
if [ -f "$app" ]; then
  tmp="$(dirname "$app")/.authadmin.yaml.$$"
  # `status:` is the pre-3.0 name of `enabled:`; neither may be left beside the new line.
  grep -v -e '^status:' -e '^enabled:' "$app" >"$tmp" || true
  printf 'enabled: %s\n' "$enabled" >>"$tmp"
  mv -f "$tmp" "$app"
fi

if [ -n "${SVC_ADMIN_PASSWORD_FILE:-}" ] && [ ! -r "$SVC_ADMIN_PASSWORD_FILE" ]; then
  echo "entrypoint: SVC_ADMIN_PASSWORD_FILE names a file that cannot be read" >&2
  exit 1
fi

if [ "$#" -gt 0 ]; then exec "$@"; fi
# The launcher's shebang flags do not apply to `node <launcher>`: pass them here.
exec node --max-semi-space-size=1 "$SVC_HOME/packages/daemon/bin/svcd.js"

#!/usr/bin/env bash
# The packaged metrics stack's token refresher: mints an svc-automation access token (client
# credentials, through script/svc-auth.sh automation-token) into DIR/token, owner-only (mode 600,
# owned by OWNER), and copies svc's CA certificate to DIR/ca.pem, both by write-then-rename, so
# Prometheus (bearer credentials_file, tls_config ca_file) never reads a partial file.
#
#   svc-metrics-token.sh --dir DIR [--owner USER] [--every SECONDS]
#
# One refresh and exit (svc-metrics-token.timer runs it every 5 minutes), or with --every a loop
# for hosts without systemd. The token is never printed. Exit codes: 0 done, 1 refused, 2 usage.
set -euo pipefail
umask 077

usage() {
  sed -n '7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

dir='' owner='' every=''
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=${2:-}; shift 2 || usage ;;
    --owner) owner=${2:-}; shift 2 || usage ;;
    --every) every=${2:-}; shift 2 || usage ;;
    *) usage ;;
  esac
done
[[ -n $dir ]] || usage
if [[ -n $every ]] && ! [[ $every =~ ^[0-9]{1,5}$ && $every -ge 1 ]]; then usage; fi

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# Installed: /opt/svc/metrics/ beside /opt/svc/script/; in a checkout: packaging/metrics/.
install_root=${SVC_INSTALL_ROOT:-}
if [[ -z $install_root ]]; then
  if [[ -x $here/../script/svc-auth.sh ]]; then install_root=$(dirname -- "$here"); else install_root=$(dirname -- "$(dirname -- "$here")"); fi
fi
svc_home=${SVC_HOME:-$install_root}
auth_script=$install_root/script/svc-auth.sh
[[ -x $auth_script ]] || { echo "svc-metrics-token: $auth_script not found" >&2; exit 1; }

refresh() {
  install -d -m 0755 "$dir"
  local tmp="$dir/.token.$$" ca_tmp="$dir/.ca.pem.$$"
  trap 'rm -f "$tmp" "$ca_tmp"' RETURN
  if ! "$auth_script" automation-token >"$tmp"; then
    echo "svc-metrics-token: minting the automation token failed; $dir/token left as it was" >&2
    return 1
  fi
  [[ -s $tmp ]] || { echo 'svc-metrics-token: empty token' >&2; return 1; }
  chmod 600 "$tmp"
  cp -- "$svc_home/work/ssl/ca.pem" "$ca_tmp"
  chmod 644 "$ca_tmp"
  if [[ -n $owner ]]; then chown -- "$owner" "$tmp" "$ca_tmp"; fi
  mv -f -- "$ca_tmp" "$dir/ca.pem"
  mv -f -- "$tmp" "$dir/token"
  echo "svc-metrics-token: refreshed $dir/token" >&2
}

if [[ -z $every ]]; then
  refresh
  exit
fi
trap 'exit 0' TERM INT
while true; do
  refresh || true
  sleep "$every" &
  wait $!
done

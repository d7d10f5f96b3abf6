#!/usr/bin/env bash
# svc-auth.sh: operator helper of the built-in identity (spec: "Operator helper commands").
# Installed under {install_root}/script/. SVC_HOME (default: the install root) holds work/.
#
#   print-initial-password             print the administrator plaintext password
#   set-initial-password               new admin password from stdin (one line, <= 72 bytes); restart to apply
#   rotate-initial-password            new random admin password; restart to apply
#   forget-initial-password            remove the plaintext line only
#   add-user <email> [role]            password on stdin; role default svc-viewer (via the administration UI)
#   delete-user <email>                remove identity and role binding (via the administration UI)
#   unlock-user <email|admin>          clear a sign-in lockout after too many failed passwords (via the UI)
#   user-token [email]                 password on stdin; password grant with svc-cli; prints the access token
#   automation-token                   client credentials with svc-automation; prints the access token
#   admin-ui                           run the administration UI (idles when SVC_AUTH_ADMIN_UI=off)
#
# Every secret file an action touches is checked on each use: regular file, mode 600, owned by the
# owner of its directory, exactly one hard link. Passwords are read from stdin, never from arguments
# or the environment; the Node helper receives them on its stdin too.
# The administration UI is found through work/ports.authadmin.json (a Unix socket, `admin_ui_socket`,
# by default work/auth/admin-ui.sock; else the `admin_ui` port of an opted-in TCP listener).
# Exit codes: 0 done, 1 refused, 2 usage, 3 reachability error (administration UI or issuer).
set -euo pipefail
umask 077

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
install_root=$(dirname -- "$script_dir")
svc_home=${SVC_HOME:-$install_root}
work_dir=$svc_home/work
secrets_dir=$work_dir/auth/secrets
helper=$install_root/packages/identity/bin/credentials-cli.ts

die() {
  local code=$1
  shift
  printf 'svc-auth: %s\n' "$*" >&2
  exit "$code"
}

usage() {
  sed -n '4,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The repository's pinned Node (24, which runs .ts directly), else the one on PATH.
node_bin() {
  local candidate
  for candidate in "$install_root/node_modules/.bin/node" "$svc_home/node_modules/.bin/node"; do
    if [[ -x $candidate ]]; then
      printf '%s\n' "$candidate"
      return
    fi
  done
  command -v node || die 1 'node not found (install the repository dependencies: npm ci)'
}

# check_secret FILE: the secret-file rules, on each use. Messages name the file and the rule.
check_secret() {
  local file=$1 dir mode uid links dir_uid
  dir=$(dirname -- "$file")
  if [[ -L $file ]]; then die 1 "$file: secret file must be a regular file (it is a symbolic link)"; fi
  if [[ ! -e $file ]]; then die 1 "$file: secret file is missing (start svc once in builtin mode to create it)"; fi
  if [[ ! -f $file ]]; then die 1 "$file: secret file must be a regular file"; fi
  read -r mode uid links < <(stat -c '%a %u %h' -- "$file")
  dir_uid=$(stat -c '%u' -- "$dir")
  if [[ $mode != 600 ]]; then die 1 "$file: secret file must have mode 600 (it has $mode)"; fi
  if [[ $uid != "$dir_uid" ]]; then
    die 1 "$file: secret file must be owned by the owner of its directory (uid $dir_uid; the file is owned by uid $uid)"
  fi
  if [[ $links != 1 ]]; then die 1 "$file: secret file must have exactly one hard link (it has $links)"; fi
}

helper() {
  local node
  node=$(node_bin)
  exec "$node" "$helper" "$@"
}

action=${1:-}
[[ -n $action ]] || usage
shift

case $action in
  print-initial-password | rotate-initial-password | forget-initial-password)
    [[ $# -eq 0 ]] || die 2 "usage: svc-auth.sh $action"
    check_secret "$secrets_dir/initial-admin-credentials"
    helper "$action" "$svc_home" </dev/null
    ;;
  set-initial-password)
    [[ $# -eq 0 ]] || die 2 'usage: svc-auth.sh set-initial-password  (password on stdin, never as an argument)'
    check_secret "$secrets_dir/initial-admin-credentials"
    helper "$action" "$svc_home"
    ;;
  add-user)
    [[ $# -ge 1 && $# -le 2 ]] || die 2 'usage: svc-auth.sh add-user <email> [role]  (password on stdin)'
    helper "$action" "$svc_home" "$@"
    ;;
  delete-user)
    [[ $# -eq 1 ]] || die 2 'usage: svc-auth.sh delete-user <email>'
    helper "$action" "$svc_home" "$1" </dev/null
    ;;
  unlock-user)
    [[ $# -eq 1 ]] || die 2 'usage: svc-auth.sh unlock-user <email>'
    helper "$action" "$svc_home" "$1" </dev/null
    ;;
  user-token)
    [[ $# -le 1 ]] || die 2 'usage: svc-auth.sh user-token [email]  (password on stdin)'
    helper "$action" "$svc_home" "$@"
    ;;
  automation-token)
    [[ $# -eq 0 ]] || die 2 'usage: svc-auth.sh automation-token'
    check_secret "$secrets_dir/automation-client"
    helper "$action" "$svc_home" </dev/null
    ;;
  admin-ui)
    [[ $# -eq 0 ]] || die 2 'usage: svc-auth.sh admin-ui'
    # The administration UI program idles without a listener when SVC_AUTH_ADMIN_UI=off, so that the
    # system application stays up for health checks.
    SVC_HOME=$svc_home exec "$(node_bin)" "$install_root/packages/identity/bin/svc-auth-admin.js"
    ;;
  -h | --help | help) usage ;;
  *) die 2 "unknown action '$action' (svc-auth.sh --help lists the actions)" ;;
esac

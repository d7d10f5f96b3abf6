#!/usr/bin/env bash
# Backup and restore of svc's work directory ($SVC_HOME/work; docs/operations.md "Backup and restore").
#
#   svc-backup.sh backup <archive.tar.gz> [--with-output]   while svcd runs
#   svc-backup.sh restore <archive.tar.gz> [--force]         svcd of $SVC_HOME stopped
#
# backup: a gzip tar of work/ (application definitions, configuration, authorization policy, the
# identity provider's state, TLS, and work/auth/secrets/ INCLUDING secret-master-key, without which
# no secret_env value can be read), written owner-only (mode 600; it holds every secret) by
# write-then-rename. svcd writes every state file by write-then-rename, so each file in the archive
# is one whole version even while svcd runs. Left out: runtime files (pids, ports, the process
# snapshot, sockets, temp files, work/run/ of svc-spawner), the definitions' write-ahead log
# (work/apps/.journal: every acknowledged definition is already renamed into its file, and a log
# read at another moment than the files would replay older versions over them at restore) and,
# unless --with-output, the applications' output files.
# restore: unpacks into $SVC_HOME/work, refusing while that svcd runs or when work/ already holds
# state (unless --force, which moves the old work/ aside to work.before-restore-<time>). The
# restored svcd starts every application afresh (no process is re-attached on a new host).
# Exit codes: 0 done, 1 refused, 2 usage.
set -euo pipefail
umask 077

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
install_root=$(dirname -- "$script_dir")
svc_home=${SVC_HOME:-$install_root}
work=$svc_home/work
MASTER_KEY=auth/secrets/secret-master-key

die() {
  local code=$1
  shift
  printf 'svc-backup: %s\n' "$*" >&2
  exit "$code"
}

usage() {
  sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Whether the svcd of this SVC_HOME runs: work/svcd.pid ({"pid": N, "start_ticks": T}) names a live
# process that started at that tick (not a recycled pid).
svcd_running() {
  local record pid ticks stat
  [[ -f $work/svcd.pid ]] || return 1
  record=$(cat -- "$work/svcd.pid")
  pid=$(sed -n 's/.*"pid"[[:space:]]*:[[:space:]]*\([0-9]\{1,10\}\).*/\1/p' <<<"$record")
  ticks=$(sed -n 's/.*"start_ticks"[[:space:]]*:[[:space:]]*\([0-9]\{1,20\}\).*/\1/p' <<<"$record")
  [[ -n $pid ]] && [[ -r /proc/$pid/stat ]] || return 1
  [[ -z $ticks ]] && return 0
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ $(awk '{print $20}' <<<"$stat") == "$ticks" ]]
}

backup() {
  local archive=$1 with_output=$2
  [[ -d $work ]] || die 1 "$work: no work directory (is SVC_HOME right?)"
  [[ -f $work/$MASTER_KEY ]] ||
    printf 'svc-backup: note: %s has no secret master key yet (no secret_env value was stored)\n' "$work" >&2
  local excludes=(
    --exclude=./svcd.pid --exclude='./ports*.json' --exclude=./.snapshot --exclude='*.sock'
    --exclude=./run --exclude=./apps/.journal
    --exclude='.tmp-*' --exclude='*.tmp' --exclude='*.tmp.*' --exclude='.*.tmp*' --exclude='./tmp'
  )
  if [[ $with_output != yes ]]; then excludes+=(--exclude=./stdout/*); fi
  local dir tmp
  dir=$(dirname -- "$archive")
  tmp=$(mktemp "$dir/.svc-backup.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  # A file replaced while tar reads it is read whole (the old version); one removed between listing
  # and reading is skipped: tar says so on stderr and exits 1, which is not a failure here.
  local status=0
  tar --create --gzip --file="$tmp" --directory="$work" --warning=no-file-changed \
    --warning=no-file-removed --ignore-failed-read "${excludes[@]}" . || status=$?
  if [[ $status -gt 1 ]]; then die 1 "tar failed (exit $status)"; fi
  chmod 600 "$tmp"
  mv -f -- "$tmp" "$archive"
  trap - EXIT
  printf 'svc-backup: wrote %s (mode 600: it holds every secret of this svc, keep it safe)\n' "$archive" >&2
}

restore() {
  local archive=$1 force=$2
  [[ -f $archive ]] || die 1 "$archive: no such archive"
  if svcd_running; then die 1 "svcd of $svc_home is running: stop it first (svc daemon stop)"; fi
  tar --list --gzip --file="$archive" "./$MASTER_KEY" >/dev/null 2>&1 ||
    printf 'svc-backup: note: the archive has no secret master key; secret_env values cannot be read\n' >&2
  if [[ -d $work ]] && [[ -n $(ls -A -- "$work" 2>/dev/null) ]]; then
    [[ $force == yes ]] || die 1 "$work already holds state: restore --force moves it aside first"
    local aside
    aside="$work.before-restore-$(date +%Y%m%d%H%M%S)"
    mv -- "$work" "$aside"
    printf 'svc-backup: moved the old work directory to %s\n' "$aside" >&2
  fi
  mkdir -p -- "$work"
  chmod 700 -- "$work"
  tar --extract --gzip --file="$archive" --directory="$work" --no-same-owner
  # Restored as root for another owner (a package install: SVC_HOME owned by `svc`): hand it over.
  if [[ $(id -u) == 0 ]] && [[ $(stat -c '%u' -- "$svc_home") != 0 ]]; then
    chown -R --reference="$svc_home" -- "$work"
  fi
  printf 'svc-backup: restored %s into %s; start svcd\n' "$archive" "$work" >&2
}

action=${1:-}
case $action in
  backup)
    [[ $# -ge 2 && $# -le 3 ]] || usage
    with_output=no
    if [[ $# -eq 3 ]]; then [[ $3 == --with-output ]] || usage; with_output=yes; fi
    backup "$2" "$with_output"
    ;;
  restore)
    [[ $# -ge 2 && $# -le 3 ]] || usage
    force=no
    if [[ $# -eq 3 ]]; then [[ $3 == --force ]] || usage; force=yes; fi
    restore "$2" "$force"
    ;;
  *) usage ;;
esac

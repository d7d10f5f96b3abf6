#!/usr/bin/env bash
# Installs what the tests need beyond npm (run by `npm test` as its pretest step, and so by .ci/run):
#   chromium                      administration UI tests (playwright-core drives the Debian browser)
#   openssl, procps               test certificates; process checks
#   python3 + venv + pip          the App Mesh 3.0 SDK compatibility suite (test/compat) and the
#                                 Python client's suite (clients/python, python3 >= 3.10)
#   python3-yaml (PyYAML)         stored app definitions read back by a YAML 1.1 reader; python3
#                                 also runs the chatty and memory-hog children of reliability tests
#   util-linux (fallocate)        output size cap (hole punching)
#   etcd-server                   cluster mode tests start a real etcd (packages/testkit/src/etcd.ts)
#   prometheus, systemd           packaging tests: a real Prometheus scrapes the packaged metrics stack;
#                                 systemd-analyze verifies the units (dpkg-deb builds the package)
#   cmake, g++, libmsgpack-cxx-dev, nlohmann-json3-dev, libcurl4-openssl-dev, libboost-dev,
#   libssl-dev, libgtest-dev      the C++ client (clients/cpp): CMake build, ctest with GoogleTest
#   Rust >= 1.89 with clippy      the Rust client (clients/rust); not from apt (Debian's is older):
#                                 without it the script stops naming the rustup command
#   openjdk-17-jdk-headless, maven  the Java client's suite (clients/java/java-client.test.ts)

#   golang-go (Go >= 1.22), gcc   the Go client library's suite (clients/go: go vet, go test -race
#                                 needs cgo); staticcheck comes from the Go module proxy, pinned
#   gcc, libc6-dev                svc-spawner (packages/spawner, C, libc only): the daemon's default
#                                 spawn path; its tests and the crash-safety suite run on it
#   openssh-server                the administration UI's test starts its own sshd on an ephemeral
#                                 loopback port for `ssh -L` to the UI's socket; a freshly installed
#                                 ssh.service is stopped and disabled again (no new listener on 22)
# Installed with apt-get when missing (root on Debian); otherwise it stops at once naming the one
# command that installs them. A machine that has everything returns at once without touching apt.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
[ -x /usr/bin/chromium ] || missing+=(chromium)
have openssl || missing+=(openssl)
have ps || missing+=(procps)
if ! have python3; then
  missing+=(python3 python3-venv python3-pip)
else
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
fi
python3 -c 'import yaml' >/dev/null 2>&1 || missing+=(python3-yaml)
have fallocate || missing+=(util-linux)
[ -x "${SVC_TEST_ETCD:-/usr/bin/etcd}" ] || missing+=(etcd-server)
[ -x "${SVC_TEST_PROMETHEUS:-/usr/bin/prometheus}" ] || missing+=(prometheus)
have systemd-analyze || missing+=(systemd)
have dpkg-deb || missing+=(dpkg)
# C++ client (clients/cpp): compiler, CMake and the Debian libraries it builds on.
have cmake || missing+=(cmake)
have g++ || missing+=(g++)
[ -f /usr/include/msgpack.hpp ] || missing+=(libmsgpack-cxx-dev)
[ -f /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
compgen -G '/usr/include/*/curl/curl.h' >/dev/null || missing+=(libcurl4-openssl-dev)
[ -f /usr/include/boost/beast.hpp ] || missing+=(libboost-dev)
[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
# Python client (clients/python): python3 >= 3.10 with venv and pip (above); its PyPI dependencies
# go into a venv under node_modules/.cache (clients/python/python-client.test.ts). apt cannot give
# a newer python3 than the release has, so an old one stops here.
if have python3 && ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
  echo "test-deps: clients/python needs python3 >= 3.10 (found $(python3 -V 2>&1)); install a newer python3 first" >&2
  exit 1
fi
# clients/java: a JDK of release 17 or newer (javac) and Maven.
if ! have javac || ! javac -version 2>&1 | grep -Eq '^javac (1[7-9]|[2-9][0-9])'; then
  missing+=(openjdk-17-jdk-headless)
fi
have mvn || missing+=(maven)

# Go client library (clients/go).
go_new_enough() { go env GOVERSION 2>/dev/null | grep -Eq '^go1\.(2[2-9]|[3-9][0-9])([^0-9]|$)'; }
go_too_old() {
  echo "test-deps: clients/go needs Go 1.22 or newer (found $(go env GOVERSION 2>/dev/null)); install it: https://go.dev/doc/install" >&2
  exit 1
}
if have go; then go_new_enough || go_too_old; else missing+=(golang-go); fi
have gcc || missing+=(gcc)
compgen -G '/usr/include/*/sys/signalfd.h' >/dev/null || [ -f /usr/include/sys/signalfd.h ] || missing+=(libc6-dev)
[ -x /usr/sbin/sshd ] && have ssh || missing+=(openssh-server)
# --- Rust client (clients/rust): cargo and clippy from rustup (~/.cargo/bin), Rust >= 1.89.
rust_problem=""
rust_path="$PATH:${CARGO_HOME:-${HOME:-/root}/.cargo}/bin"
rust_minor=""
if [[ "$(PATH="$rust_path" cargo --version 2>/dev/null)" =~ ^cargo\ 1\.([0-9]+)\. ]]; then rust_minor=${BASH_REMATCH[1]}; fi
if [ -z "$rust_minor" ] || [ "$rust_minor" -lt 89 ] || ! PATH="$rust_path" cargo clippy --version >/dev/null 2>&1; then
  rust_problem="test-deps: the Rust client needs Rust >= 1.89 with clippy, which apt does not provide; install it first: curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy"
fi
rust_check() { [ -z "$rust_problem" ] || { echo "$rust_problem" >&2; exit 1; }; }
[ ${#missing[@]} -eq 0 ] && rust_check
# --- end Rust client

[ ${#missing[@]} -eq 0 ] && exit 0

command_line="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" != 0 ] || ! have apt-get; then
  echo "test-deps: missing ${missing[*]}; install them first: sudo sh -c '${command_line}'" >&2
  [ -z "$rust_problem" ] || echo "$rust_problem" >&2
  exit 1
fi
echo "test-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The tests need these programs, never their services: without a policy-rc.d of the host's own,
# one refusing every start keeps packages such as openssh-server or prometheus from starting a
# daemon on a default port during the install (removed again whatever happens).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# Chromium with its recommended packages: fonts-liberation renders the page text.
apt-get install -y -qq "${missing[@]}" >/dev/null
# openssh-server starts and enables ssh.service under systemd: the tests only need the binary.
if [[ " ${missing[*]} " == *" openssh-server "* ]] && [ -d /run/systemd/system ]; then
  systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
fi
if have go && ! go_new_enough; then go_too_old; fi
rust_check

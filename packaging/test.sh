#!/bin/sh
# Quick start, step 2: install what the tests need, start a private
# PostgreSQL for them, then build and run the whole suite twice — a
# warnings-as-errors build (followed by the Kubernetes manifests' check,
# the ACME recipe against pebble, check-acme.sh, and the reference
# deployment of three replicas, check-cluster.sh) and an ASan+UBSan build —
# and stop the database; then the plain suite once more inside a Debian 13
# root (check-trixie.sh),
# the fuzzers, ThreadSanitizer, the Debian packages (on this machine, then
# under a real systemd) and the container image (podman).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
packaging/install-deps.sh test
jobs=$(nproc)

pgdir=$(mktemp -d /tmp/weft-pg.XXXXXX)
debs=$(mktemp -d /tmp/weft-debs.XXXXXX)
cleanup() { packaging/pgdev.sh stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir" "$pgdir.ctest" "$debs"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
packaging/pgdev.sh start "$pgdir" >&2
eval "$(packaging/pgdev.sh env "$pgdir")"

run_suite() { # build-dir, extra cmake args...
  dir=$1; shift
  echo "=== $dir: configure and build" >&2
  cmake -S . -B "$dir" -DWEFT_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "=== $dir: test" >&2
  status=0
  (cd "$dir" && ctest --output-on-failure -j"$jobs") >"$pgdir.ctest" 2>&1 || status=$?
  cat "$pgdir.ctest"
  [ "$status" -eq 0 ] || exit "$status"
  n=$(sed -n 's/.*tests failed out of \([0-9][0-9]*\).*/\1/p' "$pgdir.ctest" | tail -1)
  total=$((total + ${n:-0}))
}
total=0

run_suite build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "=== Kubernetes manifests" >&2
WEFT_BIN=build-test/server/weft WEFT_PLUGIN_PATH=build-test/plugins packaging/k8s/check.sh
echo "=== ACME HTTP-01: certbot --webroot against pebble, served by weft's static route (packaging/check-acme.sh)" >&2
WEFT_BIN=build-test/server/weft timeout 300 packaging/check-acme.sh
echo "=== the reference deployment: 3 replicas behind HAProxy, PgBouncer, Prometheus, under load (packaging/check-cluster.sh)" >&2
WEFT_BIN=build-test/server/weft WEFT_PLUGIN_PATH=build-test/plugins timeout 600 packaging/check-cluster.sh
run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZER=address
echo "=== Debian 13: the plain suite inside a Debian 13 root, with PostgreSQL 17 (packaging/check-trixie.sh)" >&2
packaging/check-trixie.sh
echo "=== fuzzing: every libFuzzer target for ${WEFT_FUZZ_SECONDS:-30} s under ASan+UBSan" >&2
tests/fuzz/run.sh "${WEFT_FUZZ_SECONDS:-30}"
echo "=== ThreadSanitizer: the concurrency tests against a TSan server" >&2
tests/tsan.sh
echo "=== Debian packages: build, lintian, install, serve, reload, drop-in, purge" >&2
WEFT_DEBS_OUT=$debs packaging/check-debian.sh
echo "=== the same packages under a real systemd (a Debian 12 container): INSTALL.md, restarts under load, crash, purge" >&2
WEFT_DEBS_DIR=$debs packaging/check-systemd.sh
echo "=== Debian 13 under a real systemd 257: the .debs built and linted in the Debian 13 root, then the same stage in a Debian 13 container (WEFT_SYSTEMD_SUITE=trixie packaging/check-systemd.sh)" >&2
WEFT_SYSTEMD_SUITE=trixie timeout 1200 packaging/check-systemd.sh
echo "=== the container image: packaging/container built on an mmdebstrap base, run with podman (packaging/check-container.sh)" >&2
# Bounded: a wedged podman must not hold the suite (the script cleans up on TERM).
WEFT_DEBS_DIR=$debs timeout 900 packaging/check-container.sh
rm -f "$pgdir.ctest"
echo "all test suites passed" >&2
echo "$total passed, 0 failed"

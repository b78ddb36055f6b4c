#!/bin/sh
# Quick start, step 2: install what the tests need, start a private
# PostgreSQL for them, then build and run the whole suite twice — the build
# the .deb ships (below; followed by the Kubernetes manifests' check, the
# ACME recipe against pebble, check-acme.sh, testssl.sh against the
# default TLS listener, check-testssl.sh, and the reference deployment of
# three replicas, check-cluster.sh) and an ASan+UBSan build — and
# stop the database; then the plain suite once more inside a Debian 13 root
# (check-trixie.sh: RelWithDebInfo, i.e. -DNDEBUG, as ThreadSanitizer's
# build is), the fuzzers, ThreadSanitizer, the Debian packages (on this
# machine, then under a real systemd) and the container image (podman).
#
# The first suite is built exactly as debian/rules builds the package:
# debhelper's cmake build system configures with -DCMAKE_BUILD_TYPE=None
# and dpkg-buildflags' CFLAGS (CPPFLAGS appended, as debhelper does: CMake
# reads no CPPFLAGS) and LDFLAGS, with DEB_BUILD_MAINT_OPTIONS=hardening=+all
# as debian/rules sets it: -g -O2, -fstack-protector-strong,
# -D_FORTIFY_SOURCE=2, -Wformat -Werror=format-security, -z relro -z now,
# and no -DNDEBUG. So every assert in the vendored h2o is live there, as in
# production, and one a request can reach fails this suite instead of
# aborting a server: the harness fails the test whose server logged a
# failed assert and lists it in $WEFT_TEST_ASSERTIONS, which must stay
# empty (tests/README.md).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
packaging/install-deps.sh test
jobs=$(nproc)

pgdir=$(mktemp -d /tmp/weft-pg.XXXXXX)
debs=$(mktemp -d /tmp/weft-debs.XXXXXX)
cleanup() { packaging/pgdev.sh stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir" "$pgdir.ctest" "$pgdir.asserts" "$debs"; }
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
  : >"$pgdir.asserts"
  (cd "$dir" && WEFT_TEST_ASSERTIONS="$pgdir.asserts" ctest --output-on-failure -j"$jobs") >"$pgdir.ctest" 2>&1 || status=$?
  cat "$pgdir.ctest"
  if [ -s "$pgdir.asserts" ]; then
    echo "=== $dir: asserts failed in the server under test:" >&2
    cat "$pgdir.asserts" >&2
    [ "$status" -ne 0 ] || status=1
  fi
  [ "$status" -eq 0 ] || exit "$status"
  n=$(sed -n 's/.*tests failed out of \([0-9][0-9]*\).*/\1/p' "$pgdir.ctest" | tail -1)
  total=$((total + ${n:-0}))
}
total=0

debflags() { DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"; }
deb_ldflags=$(debflags LDFLAGS)
run_suite build-test -DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=$(debflags CFLAGS) $(debflags CPPFLAGS)" \
  "-DCMAKE_EXE_LINKER_FLAGS=$deb_ldflags" "-DCMAKE_SHARED_LINKER_FLAGS=$deb_ldflags" "-DCMAKE_MODULE_LINKER_FLAGS=$deb_ldflags"
echo "=== Kubernetes manifests" >&2
WEFT_BIN=build-test/server/weft WEFT_PLUGIN_PATH=build-test/plugins packaging/k8s/check.sh
echo "=== ACME HTTP-01: certbot --webroot against pebble, served by weft's static route (packaging/check-acme.sh)" >&2
WEFT_BIN=build-test/server/weft timeout 300 packaging/check-acme.sh
echo "=== testssl.sh -p -s -U against the default TLS listener: no NOT ok, VULNERABLE or CBC suite (packaging/check-testssl.sh)" >&2
WEFT_BIN=build-test/server/weft timeout 400 packaging/check-testssl.sh
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
rm -f "$pgdir.ctest" "$pgdir.asserts"
echo "all test suites passed" >&2
echo "$total passed, 0 failed"

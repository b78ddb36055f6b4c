#!/bin/sh
# ThreadSanitizer run of the concurrency tests (docs/RELIABILITY.md).
#
#   tests/tsan.sh [TEST...]        default: policies reload database auto
#
# Criterion 2.4.1 aborts when built with -fsanitize=thread, so only the
# server and its plugins are instrumented: a TSan build directory holds them
# (-DWEFT_SANITIZER=thread -DWEFT_TESTS=OFF), a plain build directory holds
# the test binaries and fixtures, and the harness is pointed at the TSan
# server with WEFT_TEST_BIN and WEFT_TEST_PLUGIN_DIR (tests/support/harness.c).
#
# Every TSan report fails the run: with halt_on_error the server exits with
# status 66 at its first report, which fails the requests in flight, wt_run's
# callers and the suites' exit-status check in .fini (whose message this
# script looks for, since Criterion 2.4.1 does not fail a test on a .fini
# assertion); and every report is also written to $OUT/tsan.<pid>, which this
# script prints and counts, so no report goes unseen.
# tests/tsan.supp holds the only suppressions, each justified there.
#
# Environment: WEFT_TSAN_BUILD (default <source>/build-tsan),
# WEFT_TEST_BUILD (default <source>/build-tsan-tests), PGHOST etc. (without
# them a private cluster is started with packaging/pgdev.sh and stopped at the
# end), WEFT_TSAN_JOBS (Criterion --jobs, default 1: TSan slows the server
# 5-15x and the tests have timing bounds).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
TSAN_BUILD=${WEFT_TSAN_BUILD:-$SRC/build-tsan}
TEST_BUILD=${WEFT_TEST_BUILD:-$SRC/build-tsan-tests}
TESTS=${*:-policies reload database auto}
JOBS=${WEFT_TSAN_JOBS:-1}
NPROC=$(nproc)

if ! grep -q WEFT_TEST_BIN "$SRC/tests/support/harness.c"; then
    echo "tsan.sh: tests/support/harness.c does not read WEFT_TEST_BIN/WEFT_TEST_PLUGIN_DIR;" >&2
    echo "         the test binaries would run the plain server, not the TSan one" >&2
    exit 2
fi

echo "== TSan build of the server and plugins: $TSAN_BUILD"
mkdir -p "$TSAN_BUILD" "$TEST_BUILD"
cmake -S "$SRC" -B "$TSAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZER=thread -DWEFT_TESTS=OFF \
    >"$TSAN_BUILD/configure.log" 2>&1 || { cat "$TSAN_BUILD/configure.log" >&2; exit 1; }
cmake --build "$TSAN_BUILD" -j "$NPROC" >"$TSAN_BUILD/build.log" 2>&1 || { tail -50 "$TSAN_BUILD/build.log" >&2; exit 1; }

echo "== test binaries (plain build): $TEST_BUILD"
cmake -S "$SRC" -B "$TEST_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_TESTS=ON \
    >"$TEST_BUILD/configure.log" 2>&1 || { cat "$TEST_BUILD/configure.log" >&2; exit 1; }
targets=
for t in $TESTS; do
    targets="$targets test_integration_$t"
done
# shellcheck disable=SC2086
cmake --build "$TEST_BUILD" -j "$NPROC" --target $targets >"$TEST_BUILD/build.log" 2>&1 ||
    { tail -50 "$TEST_BUILD/build.log" >&2; exit 1; }

OUT=$(mktemp -d /tmp/weft-tsan.XXXXXX)
PGTMP=
cleanup() {
    if [ -n "$PGTMP" ]; then
        "$SRC/packaging/pgdev.sh" stop "$PGTMP" >/dev/null 2>&1 || true
        rm -rf "$PGTMP"
    fi
}
trap cleanup EXIT INT TERM

if [ -z "${PGHOST:-}" ] && [ -z "${PGSERVICE:-}" ]; then
    PGTMP=$(mktemp -d /tmp/wtsan-pg.XXXXXX)
    echo "== private PostgreSQL in $PGTMP"
    "$SRC/packaging/pgdev.sh" start "$PGTMP" >"$OUT/pgdev.log" 2>&1 || { cat "$OUT/pgdev.log" >&2; exit 1; }
    eval "$("$SRC/packaging/pgdev.sh" env "$PGTMP")"
    export PGHOST PGPORT PGUSER PGDATABASE
fi

# WEFT_TEST_SANITIZER tells tests whose bounds mean nothing under TSan (RSS:
# shadow memory grows with every thread a reload starts) to skip just those.
export WEFT_TEST_SANITIZER=thread
export WEFT_TEST_BIN="$TSAN_BUILD/server/weft"
export WEFT_TEST_PLUGIN_DIR="$TSAN_BUILD/plugins"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:exitcode=66:history_size=4:log_path=$OUT/tsan:suppressions=$SRC/tests/tsan.supp${TSAN_EXTRA_OPTIONS:+:$TSAN_EXTRA_OPTIONS}"

failed=0
for t in $TESTS; do
    bin=$TEST_BUILD/tests/test_integration_$t
    echo "== $t (against $WEFT_TEST_BIN)"
    # Criterion 2.4.1 ignores assertions in a suite's .fini, where the suites
    # check the server's exit status: look for their message as well.
    if "$bin" --jobs "$JOBS" >"$OUT/$t.log" 2>&1 && ! grep -q 'weft exited with' "$OUT/$t.log"; then
        grep -E '^\[====\]' "$OUT/$t.log" || true
    else
        failed=1
        grep -E '^\[(FAIL|====)\]|Assertion Failed|weft exited with' "$OUT/$t.log" | head -40 >&2 || true
        echo "   $t FAILED: $OUT/$t.log" >&2
    fi
done

reports=$(find "$OUT" -name "tsan.*" -type f | wc -l)
if [ "$reports" -gt 0 ]; then
    failed=1
    echo "== $reports ThreadSanitizer report file(s):" >&2
    for f in "$OUT"/tsan.*; do
        echo "--- $f" >&2
        sed -n '1,80p' "$f" >&2
    done
fi

if [ $failed -ne 0 ]; then
    echo "tsan: FAILED (logs in $OUT)" >&2
    exit 1
fi
echo "tsan: no ThreadSanitizer reports; $TESTS passed against the TSan server (logs in $OUT)"

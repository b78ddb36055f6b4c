#!/bin/sh
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each one for
# SECONDS (default 60), starting from its seed corpus in tests/fuzz/corpus/.
# Fails if any target finds a crash, a leak, a sanitizer report or a hang
# (> 10 s on one input); the input is left in $BUILD/artifacts/.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# Environment: WEFT_FUZZ_BUILD (default <source>/build-fuzz), CC (default
# clang), WEFT_FUZZ_JOBS (targets run at once, default 1).
#
# Turning a finding into a regression: copy the artifact into
# tests/fuzz/corpus/<target>/ under a descriptive name (every later run
# replays it first), fix the bug, and add a unit or integration test that
# fails without the fix.
set -eu

SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${WEFT_FUZZ_BUILD:-$SRC/build-fuzz}
TARGETS=${*:-fuzz_router fuzz_config fuzz_descriptor fuzz_persons_json fuzz_accounts_json fuzz_proxyproto fuzz_tracectx fuzz_events_query fuzz_chat_message fuzz_aggregate_ids fuzz_log}

case $SECONDS_EACH in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

if ! command -v "${CC:-clang}" >/dev/null 2>&1; then
    echo "run.sh: ${CC:-clang} not found (apt-get install -y clang libclang-rt-14-dev)" >&2
    exit 2
fi

mkdir -p "$BUILD"
CC=${CC:-clang} cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWEFT_FUZZ=ON -DWEFT_SANITIZER=address -DWEFT_TESTS=OFF >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 1; }
if ! grep -q weft_fuzz "$BUILD/Makefile" "$BUILD/build.ninja" 2>/dev/null; then
    echo "run.sh: $BUILD has no fuzz targets: the root CMakeLists.txt must add tests/fuzz when WEFT_FUZZ is ON" >&2
    exit 2
fi
cmake --build "$BUILD" --target weft_fuzz -j "$(nproc)"

mkdir -p "$BUILD/artifacts" "$BUILD/corpus"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$SRC/tests/fuzz/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

run_one() {
    t=$1
    bin=$BUILD/tests/fuzz/$t
    seeds=$SRC/tests/fuzz/corpus/$t
    work=$BUILD/corpus/$t # new inputs go here, never into the committed seeds
    log=$BUILD/artifacts/$t.log
    dict=
    [ -f "$SRC/tests/fuzz/$t.dict" ] && dict=-dict=$SRC/tests/fuzz/$t.dict
    mkdir -p "$work"
    echo "== $t: ${SECONDS_EACH}s (log: $log)"
    # shellcheck disable=SC2086
    if "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=8192 $dict \
        -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" "$work" "$seeds" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -E '^#[0-9]+.*(DONE|pulse)' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
        echo "   $t: ok, ${execs:-?} executions, coverage ${cov:-?}, corpus $(find "$work" -type f | wc -l) + $(find "$seeds" -type f | wc -l) seeds"
        return 0
    fi
    echo "   $t: FAILED" >&2
    grep -E 'ERROR: |SUMMARY: |Test unit written to|==[0-9]+==' "$log" | head -20 >&2 || true
    return 1
}

failed=0
jobs=${WEFT_FUZZ_JOBS:-1}
if [ "$jobs" -le 1 ]; then
    for t in $TARGETS; do
        run_one "$t" || failed=1
    done
else
    pids=
    for t in $TARGETS; do
        run_one "$t" &
        pids="$pids $!"
        if [ "$(echo "$pids" | wc -w)" -ge "$jobs" ]; then
            for p in $pids; do wait "$p" || failed=1; done
            pids=
        fi
    done
    for p in $pids; do wait "$p" || failed=1; done
fi
if [ $failed -ne 0 ]; then
    echo "fuzzing found problems: reproduce with $BUILD/tests/fuzz/<target> <artifact>" >&2
    exit 1
fi
echo "fuzzing: all targets clean"

#!/usr/bin/env bash
# Long event streams under each policy (issue 44 #4): does a stream's memory
# grow with its length? 20 concurrent Server-Sent Event streams of 100,000
# events each (GET /{policy}/events?count=100000&interval_ms=0, the bundled
# events plugin: one flush and one sleep per event), on a fresh weft per
# policy; weft's VmRSS is read from /proc before the streams, VmHWM once
# every stream has ended, and VmRSS again then.
#
#   bench/events_long.sh [--write]    --write puts the table into docs/BENCHMARKS.md
#
# Environment: STREAMS (default 20), EVENTS (default 100000, at most 100000:
# the plugin's bound), WEFT_BUILD (a build directory with server/weft and
# plugins/; built as Release into <repo>/build-bench when it has none),
# WEFT_BEFORE (another build directory, e.g. of an older commit, measured the
# same way first and shown as rows of its own) and BEFORE_LABEL (what those
# rows are called; default "before"). Bounded: each stream set is given
# LIMIT_S seconds (default 240), so a policy takes at most that much (the pool,
# slowest, took 94 s on a loaded 2-core machine).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
STREAMS=${STREAMS:-20}
EVENTS=${EVENTS:-100000}
LIMIT_S=${LIMIT_S:-240}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup events_long "$@"

command -v curl >/dev/null || die "curl missing: packaging/install-deps.sh bench"
if [[ ! -x $BUILD/server/weft ]]; then
    log "building weft (Release) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
fi
[[ -z ${WEFT_BEFORE:-} || -x $WEFT_BEFORE/server/weft ]] || die "WEFT_BEFORE=$WEFT_BEFORE has no server/weft"
# Absolute: the config (in $TMP) names the plugin directories.
BUILD=$(cd "$BUILD" && pwd)
[[ -z ${WEFT_BEFORE:-} ]] || WEFT_BEFORE=$(cd "$WEFT_BEFORE" && pwd)

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# one BUILD POLICY LABEL — appends to `rows` the table row of POLICY's streams on a fresh weft of BUILD.
one() {
    local build=$1 policy=$2 label=$3 port wpid t0 t1 i rss0 rss1 hwm got=0 n c secs curls=()
    free_port port
    cat >"$TMP/weft.conf" <<EOF
threads = $(nproc);
listen = [ "127.0.0.1:$port" ];
plugin_dirs = [ "$build/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
pools = ( { name = "default"; size = 4; queue = 100; max_long_lived = $((STREAMS + 4)); } );
routes = ( { path = "/$policy/events"; plugin = "events"; dispatch = "$policy"; methods = ["GET"]; } );
EOF
    # shellcheck disable=SC2046 # one word per variable to unset
    env $(env | awk -F= '/^PG/ {printf "-u %s ", $1}') "$build/server/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
    wpid=$!
    PIDS+=("$wpid")
    wait_http "http://127.0.0.1:$port/"
    # A short stream first: what every stream needs once (a worker, a coroutine stack) is in the idle figure.
    curl -fsS -o /dev/null "http://127.0.0.1:$port/$policy/events?count=10&interval_ms=0"
    rss0=$(rss_kib "$wpid")
    t0=$(date +%s.%N)
    for ((i = 0; i < STREAMS; i++)); do
        timeout "$LIMIT_S" curl -fsS -o "$TMP/s$i" "http://127.0.0.1:$port/$policy/events?count=$EVENTS&interval_ms=0" &
        curls+=($!)
    done
    # One that fails or times out is reported (the events count shows it), not fatal.
    for c in "${curls[@]}"; do wait "$c" || log "$label $policy: a stream's curl ended with status $?"; done
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    hwm=$(hwm_kib "$wpid")
    rss1=$(rss_kib "$wpid")
    for ((i = 0; i < STREAMS; i++)); do
        n=$(grep -c '^id: ' "$TMP/s$i" || true)
        got=$((got + n))
    done
    rm -f "$TMP"/s*
    stop_pid "$wpid"
    PIDS=()
    ((got == STREAMS * EVENTS)) || log "$label $policy: $got of $((STREAMS * EVENTS)) events arrived"
    log "$label $policy: RSS $(mib "$rss0") -> peak $(mib "$hwm"), after $(mib "$rss1") MiB in $secs s"
    rows+=$(printf '| %s | %s | %d | %s | %s | %s | %s | %s | %s |' "$label" "$policy" "$got" "$secs" "$(mib "$rss0")" \
        "$(mib "$hwm")" "$(mib "$rss1")" "$(mib $((hwm - rss0)))" \
        "$(awk -v d=$((hwm - rss0)) -v n="$got" 'BEGIN { printf "%.1f", (n > 0 ? d * 1024 / n : 0) }')")$'\n'
}

rows=
if [[ -n ${WEFT_BEFORE:-} ]]; then
    for p in pool coroutine reactive; do one "$WEFT_BEFORE" "$p" "${BEFORE_LABEL:-before}"; done
fi
here=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
for p in pool coroutine reactive; do one "$BUILD" "$p" "$here"; done
BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt")

section="<!-- events-long:begin -->
### Long event streams: memory against a stream's length, per policy

\`bench/events_long.sh\`: $STREAMS concurrent \`GET /{policy}/events?count=$EVENTS&interval_ms=0\` (the events plugin: one
flush and one sleep per event) with curl over HTTP/1.1, on a fresh weft per policy (${BUILD_TYPE:-Release} build,
$(nproc) loops); VmRSS before the streams (after one short stream), VmHWM and VmRSS once every stream has ended.
Run: \`${WEFT_BEFORE:+WEFT_BEFORE=<a build of ${BEFORE_LABEL:-before}> BEFORE_LABEL=${BEFORE_LABEL:-before} }bench/events_long.sh --write\`.
Target: a stream's memory does not grow with its length (issue 44 #4: the reactive waits took their records from the
request's arena until the request ended).

| build | policy | events delivered | seconds | RSS before MiB | peak (VmHWM) MiB | RSS after MiB | growth (peak − before) MiB | bytes per event |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows%$'\n'}

_$(date -u +%Y-%m-%dT%H:%MZ), one run per row;
1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores shared with other jobs._
<!-- events-long:end -->"
printf '%s\n' "$section"
((WRITE)) && replace_section "$DOC" "<!-- events-long:begin -->" "<!-- events-long:end -->" "$section"
exit 0

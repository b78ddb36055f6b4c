#!/usr/bin/env bash
# 1,000 concurrent Server-Sent Event streams under coroutine (issue 16:
# weft's RSS must stay under 64 MiB). wrk holds 1,000 connections, each on
# GET /coroutine/events with a long interval, so every stream stays open;
# once /metrics shows 1,000 live coroutines and every stream has had time
# for two events, weft's VmRSS and VmHWM are read from /proc. Then the
# clients leave and the script times how long the server takes to free the
# 1,000 coroutines.
#
#   bench/events_rss.sh [--write]    --write puts the table into docs/BENCHMARKS.md
#
# Environment: STREAMS (default 1000), INTERVAL_MS (default 2000), WEFT_BUILD
# (a build directory with server/weft and plugins/; built as Release into
# <repo>/build-bench when it has none). Bounded: about a minute at most.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
STREAMS=${STREAMS:-1000}
INTERVAL_MS=${INTERVAL_MS:-2000}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup events_rss "$@"

for t in wrk curl; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
(($(ulimit -n) >= STREAMS + 200)) || die "open-files limit $(ulimit -n) is too low for $STREAMS streams"
if [[ ! -x $BUILD/server/weft ]]; then
    log "building weft (Release) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
fi
BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt")

port=
free_port port
cat >"$TMP/weft.conf" <<EOF
threads = $(nproc);
listen = [ "127.0.0.1:$port" ];
plugin_dirs = [ "$BUILD/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
routes = ( { path = "/coroutine/events"; plugin = "events"; dispatch = "coroutine"; methods = ["GET"]; } );
EOF
# shellcheck disable=SC2046 # one word per variable to unset
env $(env | awk -F= '/^PG/ {printf "-u %s ", $1}') "$BUILD/server/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
WPID=$!
PIDS+=("$WPID")
wait_http "http://127.0.0.1:$port/"
metric() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
# await NAME OP VALUE SECONDS — polls /metrics; prints the seconds it took.
await() {
    local t0 v
    t0=$(date +%s.%N)
    while :; do
        v=$(metric "$1")
        awk -v v="${v:-0}" -v op="$2" -v w="$3" 'BEGIN { exit !(op == "ge" ? v >= w : v <= w) }' && break
        awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$4" 'BEGIN { exit !(b - a > s) }' && die "$1 stayed at $v (want $2 $3)"
        sleep 0.05
    done
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

curl -fsS -o /dev/null "http://127.0.0.1:$port/coroutine/events?count=1&interval_ms=0"
rss_idle=$(rss_kib "$WPID")
log "$STREAMS streams of GET /coroutine/events?interval_ms=$INTERVAL_MS"
# The streams never end by themselves within the run: count * interval is far beyond it.
wrk -t2 -c"$STREAMS" -d60s --timeout 120s \
    "http://127.0.0.1:$port/coroutine/events?count=100000&interval_ms=$INTERVAL_MS" >"$TMP/wrk.log" 2>&1 &
KPID=$!
PIDS+=("$KPID")
t_up=$(await weft_coroutines_live ge "$STREAMS" 50)
sleep "$(awk -v m="$INTERVAL_MS" 'BEGIN { print 2 * m / 1000 }')" # every stream has flushed two events
live=$(metric weft_coroutines_live)
rss=$(rss_kib "$WPID")
hwm=$(hwm_kib "$WPID")
stack=$(metric weft_coroutine_stack_bytes)
stop_pid "$KPID"
t_free=$(await weft_coroutines_live le 0 30)
stop_pid "$WPID"

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
per=$(awk -v a="$rss" -v b="$rss_idle" -v n="$STREAMS" 'BEGIN { printf "%.1f", (a - b) / n }')
verdict=$(awk -v k="$hwm" 'BEGIN { print (k < 64 * 1024) ? "**met**" : "**missed**" }')
log "RSS idle $(mib "$rss_idle") MiB, with $live streams $(mib "$rss") MiB (peak $(mib "$hwm")), freed in ${t_free} s"

section="<!-- events-rss:begin -->
### 1,000 Server-Sent Event streams under coroutine: RSS

\`bench/events_rss.sh\`: wrk holds $STREAMS connections on \`GET /coroutine/events?count=100000&interval_ms=$INTERVAL_MS\`
(${BUILD_TYPE:-RelWithDebInfo} build, $(nproc) loops, default coroutine stacks); RSS read from \`/proc/PID/status\` once
\`weft_coroutines_live\` showed all $STREAMS (after ${t_up} s) and every stream had flushed two events.

| streams live | RSS idle MiB | RSS MiB | peak (VmHWM) MiB | per stream KiB | coroutine stacks mapped MiB | target | freed after the clients left |
|---:|---:|---:|---:|---:|---:|---|---:|
| $live | $(mib "$rss_idle") | $(mib "$rss") | $(mib "$hwm") | $per | $(awk -v b="${stack:-0}" 'BEGIN { printf "%.1f", b / 1048576 }') | < 64 MiB — $verdict | ${t_free} s |

Stacks are mapped (virtual) per coroutine, but only the pages a handler touches count in RSS.
_$(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?"), one run;
1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores shared with other jobs._
<!-- events-rss:end -->"
printf '%s\n' "$section"
((WRITE)) && replace_section "$DOC" "<!-- events-rss:begin -->" "<!-- events-rss:end -->" "$section"
exit 0

#!/usr/bin/env bash
#
# bench/trace.sh — what trace context and span export cost a tiny request
# (issue 27), about a minute on 2 cores (BENCH_SECONDS=5):
#
#   bench/trace.sh            # print the section to stdout
#   bench/trace.sh --write    # ... and write it into docs/BENCHMARKS.md
#
# wrk on /hello (reactive, the hello plugin) with a traceparent on every
# request, against the same weft in three configurations, in one run:
#   none      no trace group: the context is read and a span id made, nothing recorded
#   exported  trace.otlp_endpoint at a sink (a second weft answering POST /v1/traces
#             with 200), every request sampled: one span built, queued, encoded, POSTed
#   dropped   the endpoint refuses connections: every span built, queued and dropped
# and the ratios of the last two to the first. Every figure is the median of
# 3 runs (5 when the spread passes 10 %).
#
# Needs: wrk, curl (packaging/install-deps.sh bench).
# Environment: BENCH_SECONDS (default 5), WEFT_BUILD (Release build
# directory, default <repo>/build-bench).
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${BENCH_SECONDS:-5}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup trace "$@"

for t in wrk curl; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

log "building weft (Release) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
    cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
# A private copy: a rebuild while we measure must not swap the binary.
mkdir -p "$TMP/plugins"
cp "$BUILD/server/weft" "$TMP/weft"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
NCPU=$(nproc)
free_port PORT SINK

cat >"$TMP/report.lua" <<'EOF'
wrk.headers["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout + e.status))
end
EOF

# The sink: one loop, 200 to every export.
cat >"$TMP/sink.conf" <<EOF
threads = 1;
listen = [ "127.0.0.1:$SINK" ];
admin = false;
log = { level = "warn"; };
routes = ( { path = "/v1/traces"; methods = ["POST"]; plugin = "hello"; dispatch = "reactive"; } );
EOF
WEFT_PLUGIN_PATH=$TMP/plugins "$TMP/weft" -c "$TMP/sink.conf" 2>"$TMP/sink.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$SINK/metrics"

# start CONFIG-NAME TRACE-GROUP
start() {
    cat >"$TMP/$1.conf" <<EOF
threads = $NCPU;
listen = [ "127.0.0.1:$PORT" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 2; };
$2
routes = ( { path = "/hello"; plugin = "hello"; dispatch = "reactive"; } );
EOF
    WEFT_PLUGIN_PATH=$TMP/plugins "$TMP/weft" -c "$TMP/$1.conf" 2>"$TMP/$1.log" &
    WEFT_PID=$!
    wait_http "http://127.0.0.1:$PORT/metrics"
}
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

declare -A GROUP=(
    [none]=""
    [exported]="trace = { otlp_endpoint = \"http://127.0.0.1:$SINK/v1/traces\"; batch_interval_ms = 200; };"
    [dropped]="trace = { otlp_endpoint = \"http://127.0.0.1:1/v1/traces\"; batch_interval_ms = 200; };"
)
declare -A RPS P99 SPANS MED
for c in none exported dropped; do
    log "$c"
    start "$c" "${GROUP[$c]}"
    repeat run_wrk 50 "$SECS" "http://127.0.0.1:$PORT/hello"
    RPS[$c]=$(fmt "$R_MED" "$R_MIN" "$R_MAX")
    MED[$c]=$R_MED
    P99[$c]=$(field p99)
    SPANS[$c]="$(metric weft_trace_spans_exported_total) / $(metric weft_trace_spans_dropped_total)"
    stop_pid "$WEFT_PID"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

b="<!-- trace-cost:begin -->" e="<!-- trace-cost:end -->"
text="$b
### Trace context and span export on /hello

\`wrk -t2 -c50 -d${SECS}s\` on \`/hello\` (reactive) with a sampled \`traceparent\` on every request. Requests/s,
median of 3 (min–max); spans exported / dropped as \`/metrics\` counted them over all runs of that configuration.

| trace group | req/s | p99 ms | spans exported / dropped | ratio to none |
|---|---:|---:|---:|---:|
| none (context read, nothing recorded) | ${RPS[none]} | ${P99[none]} | ${SPANS[none]} | 1.00 |
| exported to a sink weft | ${RPS[exported]} | ${P99[exported]} | ${SPANS[exported]} | **$(ratio "${MED[exported]}" "${MED[none]}")** |
| endpoint refusing (all dropped) | ${RPS[dropped]} | ${P99[dropped]} | ${SPANS[dropped]} | **$(ratio "${MED[dropped]}" "${MED[none]}")** |

_$(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, \`bench/trace.sh --write\` (BENCH_SECONDS=$SECS); 1-minute load average when the section finished: $(cut -d' ' -f1 /proc/loadavg) ($NCPU cores; weft, the sink and wrk share them)._
$e"
echo "$text"
if ((WRITE)); then replace_section "$DOC" "$b" "$e" "$text"; fi

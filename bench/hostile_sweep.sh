#!/usr/bin/env bash
# bench/hostile_sweep.sh — issue 30's memory attacks, one after the other,
# against one weft with the default limits: during each, weft's resident
# memory must stay ≤ 256 MiB and GET /hello (a new connection every 50 ms,
# from another client) answer with p99 ≤ 50 ms; after each, RSS must be
# back to ≤ 2 × idle within 10 s. Results are ratios to those limits (≤ 1
# is met), measured in the same run:
#
#   bench/hostile_sweep.sh            # print the table
#   bench/hostile_sweep.sh --write    # ... and put it into docs/BENCHMARKS.md
#
# The attackers are the tests' own (tests/support/*.py, Debian's python3-h2
# and python3-hpack: /usr/bin/python3). Each attack is bounded (its own
# limits, and `timeout`); the whole sweep takes about two minutes.
#
# Environment: WEFT_BUILD (a build directory with server/weft and plugins/;
# built as Release into <repo>/build-bench when it has none).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
DOC=$ROOT/docs/BENCHMARKS.md
SUP=$ROOT/tests/support
PY=/usr/bin/python3
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup hostile_sweep "$@"

for t in curl openssl timeout; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
"$PY" -c 'import h2, hpack' 2>/dev/null || die "python3-h2 and python3-hpack missing (apt-get install python3-h2)"
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [[ ! -x $BUILD/server/weft ]]; then
    log "building weft (Release) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
fi
BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt")

# The upstream aggregate calls (its /big/N answers N bytes).
"$PY" "$SUP/mock_upstream.py" >"$TMP/mock.out" 2>&1 &
MPID=$!
PIDS+=("$MPID")
for _ in $(seq 100); do grep -q '^port ' "$TMP/mock.out" && break; sleep 0.05; done # poll with a deadline
mport=$(awk '/^port / { print $2 }' "$TMP/mock.out")
[[ -n $mport ]] || die "the mock upstream did not start"

(cd "$TMP" && openssl req -x509 -newkey rsa:2048 -nodes -keyout server.key -out server.crt -days 2 \
    -subj /CN=localhost >/dev/null 2>&1) || die "openssl"
port='' tport=''
free_port port
free_port tport
# weft's default limits: nothing here is tuned for the attacks. Only
# aggregate's own max_response is raised (4 → 16 MiB), or its 8 MB answers
# would be refused (502) before weft ever held them for a client.
cat >"$TMP/weft.conf" <<EOF
threads = 2;
listen = ( "127.0.0.1:$port", { address = "127.0.0.1:$tport"; tls = { certificate = "$TMP/server.crt"; key = "$TMP/server.key"; }; } );
plugin_dirs = [ "$BUILD/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
routes = (
  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; },
  { path = "/pool/cpu"; plugin = "cpu"; dispatch = "pool"; },
  { path = "/coroutine/chat"; plugin = "chat"; dispatch = "coroutine"; methods = ["GET"]; },
  { path = "/coroutine/accounts/transfer"; plugin = "accounts"; dispatch = "coroutine"; methods = ["POST"]; },
  { path = "/coroutine/aggregate"; plugin = "aggregate"; dispatch = "coroutine";
    options = { upstream = "http://127.0.0.1:$mport"; path = "/big/"; timeout_ms = 30000; max_response = 16777216; }; }
);
EOF
# shellcheck disable=SC2046 # one word per variable to unset
env $(env | awk -F= '/^PG/ {printf "-u %s ", $1}') "$BUILD/server/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
WPID=$!
PIDS+=("$WPID")
wait_http "http://127.0.0.1:$port/hello"
now() { date +%s.%N; }

# The bystander and the memory, sampled through the whole sweep with times.
(while :; do
    t=$(now)
    ms=$(curl -s -o /dev/null -m 5 -w '%{time_total}' "http://127.0.0.1:$port/hello" || echo 5)
    echo "$t $ms"
    sleep 0.05 # the probe's pace
done) >"$TMP/probe.log" &
PIDS+=($!)
(while [[ -e /proc/$WPID ]]; do
    echo "$(now) $(rss_kib "$WPID")"
    sleep 0.1 # the sampling interval
done) >"$TMP/rss.log" &
PIDS+=($!)
sleep 2 # the scenario: two seconds of idle samples first
idle=$(rss_kib "$WPID")

# window FILE FROM TO — the values of FILE's samples taken between FROM and TO.
window() { awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b { print $2 }' "$1"; }
p99() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print 0; exit } i = int(NR * 0.99 + 0.999); if (i > NR) i = NR; print v[i] }'; }
maxv() { sort -g | tail -1; }

rows=()
# attack NAME CMD... — runs one attack (a program bounded by 90 s, or one of
# the functions below, bounded by themselves), then waits up to
# 10 s for RSS to come back to 2 × idle, and records one row.
attack() {
    local name=$1 t0 t1 back=">10" rc=0
    shift
    log "attack: $name"
    t0=$(now)
    if declare -F "$1" >/dev/null; then # the script's own, bounded by itself
        "$@" >"$TMP/attack.out" 2>&1 || rc=$?
    else
        timeout 90 "$@" >"$TMP/attack.out" 2>&1 || rc=$?
    fi
    t1=$(now)
    for i in $(seq 0 100); do # poll, 10 s deadline
        if (($(rss_kib "$WPID") <= 2 * idle)); then back=$(awk -v i="$i" 'BEGIN { printf "%.1f", i / 10 }'); break; fi
        sleep 0.1
    done
    local peak lat n
    peak=$(window "$TMP/rss.log" "$t0" "$t1" | maxv)
    peak=${peak:-$(rss_kib "$WPID")}
    lat=$(window "$TMP/probe.log" "$t0" "$t1" | p99)
    n=$(window "$TMP/probe.log" "$t0" "$t1" | wc -l)
    rows+=("$(awk -v name="$name" -v s="$t0" -v e="$t1" -v peak="$peak" -v lat="$lat" -v n="$n" -v back="$back" \
        -v idle="$idle" -v rc="$rc" -v out="$(head -c 160 "$TMP/attack.out" | tr '\n|' ' /')" 'BEGIN {
        printf "| %s | %.0f | %.1f | %.2f | %.1f | %.2f | %d | %s | %s |", name, e - s, peak / 1024, peak / (256 * 1024),
            lat * 1000, lat * 1000 / 50, n, back, (rc == 0 ? out : "exit " rc ": " out) }')")
}

# shellcheck disable=SC2317 # run through attack(), by name
# slow_readers ARGS... — holds the slow_reader.py clients for 10 s, then lets them go.
slow_readers() {
    "$PY" "$SUP/slow_reader.py" "$@" >"$TMP/slow.out" &
    local pid=$!
    for _ in $(seq 200); do grep -q '^ready' "$TMP/slow.out" && break; sleep 0.05; done # poll with a deadline
    sleep 10 # the scenario: the clients hold their answers unread this long
    kill "$pid"
    wait "$pid" || true
    cat "$TMP/slow.out"
}
nested() { # a 2 KB JSON body nested 1,000 deep, 200 times (accounts' depth guard: issue 30 item 1)
    local body
    body=$(printf '%.0s[' $(seq 1000))
    for _ in $(seq 200); do curl -s -m 5 -o /dev/null -H 'content-type: application/json' -d "$body" \
        "http://127.0.0.1:$port/coroutine/accounts/transfer" || true; done
    echo "200 sent"
}

IDS8=$(printf '1000000,%.0s' $(seq 8))
attack "HPACK bomb: 30 streams × 16,000 copies of a 4 KB header (h2, TLS)" \
    "$PY" "$SUP/hpack_bomb.py" "$tport" /pool/cpu 30 16000
attack "WebSocket ping flood, pongs never read (250 MB)" "$PY" "$SUP/ws_flood.py" ping "$port" /coroutine/chat 250
attack "broadcast to 100 members that never read (6 × 1 MB)" \
    "$PY" "$SUP/ws_flood.py" silent "$port" /coroutine/chat 100 1048576 6
attack "Rapid Reset: 60,000 HEADERS+RST_STREAM (h2, TLS)" "$PY" "$SUP/rapid_reset.py" "$tport" /pool/cpu 60000
attack "10 HTTP/1.1 clients never reading an 8 MB aggregate answer (10 s)" \
    slow_readers h1 "$port" "/coroutine/aggregate?ids=${IDS8%,}" 10
attack "10 HTTP/2 connections never reading an 8 MB aggregate answer (10 s)" \
    slow_readers h2 "$port" "/coroutine/aggregate?ids=${IDS8%,}" 10 1
attack "a 1,000-deep JSON body, 200 times" nested

stop_pid "$WPID"
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
section="<!-- hostile-sweep:begin -->
### Issue 30's attacks, one after the other: memory and a bystander's latency

\`bench/hostile_sweep.sh\`: one weft with the default limits (${BUILD_TYPE:-?} build, 2 loops; aggregate's \`max_response\`
raised to 16 MiB so that its 8 MB answers are given, not refused), each attack of
issue 30 in turn with the tests' own attackers (\`tests/support/*.py\`); meanwhile another client asks
\`GET /hello\` on a new connection every 50 ms and weft's RSS is sampled every 100 ms. Limits: RSS ≤ 256 MiB and
/hello p99 ≤ 50 ms during each attack (ratio ≤ 1 is met), RSS back to ≤ 2 × idle ($(mib "$idle") MiB idle) within 10 s after it.

| attack | s | peak RSS MiB | RSS / 256 MiB | /hello p99 ms | p99 / 50 ms | probes | back to 2 × idle after s | attacker's report |
|---|---:|---:|---:|---:|---:|---:|---:|---|
$(printf '%s\n' "${rows[@]}")

_$(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?"), one run;
1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores shared with other jobs._
<!-- hostile-sweep:end -->"
printf '%s\n' "$section"
((WRITE)) && replace_section "$DOC" "<!-- hostile-sweep:begin -->" "<!-- hostile-sweep:end -->" "$section"
exit 0

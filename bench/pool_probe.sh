#!/usr/bin/env bash
#
# bench/pool_probe.sh — what a persons GET costs under one policy and one
# pool_connections setting, in figures that survive a loaded machine: CPU
# per request of weft and of PostgreSQL, context switches (perf stat) and,
# with STRACE=1, weft's system calls (strace -c -f; slows weft a lot, compare
# counts per request, not rates). The source of docs/DATABASE.md's "Pool
# workers and connections".
#
#   bench/pool_probe.sh POOL_CONNECTIONS POLICY [SECONDS]
#   e.g. bench/pool_probe.sh 10 pool 4; bench/pool_probe.sh 0 pool 4
#
# Environment: WEFT_BUILD (default <repo>/build-bench, built beforehand), STRACE=1.
#
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${WEFT_BUILD:-$ROOT/build-bench}
N=${1:?pool_connections}
POL=${2:?policy}
S=${3:-4}
T=$(mktemp -d "${TMPDIR:-/tmp}/weft-probe.XXXXXX")
P=
cleanup() {
    [[ -n $P ]] && { kill "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true; }
    "$ROOT/packaging/pgdev.sh" stop "$T/pg" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
"$ROOT/packaging/pgdev.sh" start "$T/pg" >/dev/null 2>&1
eval "$("$ROOT/packaging/pgdev.sh" env "$T/pg")"
cat >"$T/weft.conf" <<CONF
threads = 2;
listen = ["127.0.0.1:0"];
admin = false;
log = { level = "info"; };
database = { conninfo = "dbname=weft"; pool_connections = $N; loop_connections = 2; };
pools = ({ name = "default"; size = 200; queue = 10000; });
routes = (
  { path = "/pool/persons/{id}"; plugin = "persons"; dispatch = "pool"; methods = ["GET"]; },
  { path = "/coroutine/persons/{id}"; plugin = "persons"; dispatch = "coroutine"; methods = ["GET"]; },
  { path = "/reactive/persons/{id}"; plugin = "persons"; dispatch = "reactive"; methods = ["GET"]; }
);
CONF
cat >"$T/random.lua" <<'LUA'
math.randomseed(os.time())
request = function() return wrk.format("GET", wrk.path .. math.random(1, 1000)) end
LUA
WEFT_PLUGIN_PATH=$B/plugins "$B/server/weft" -c "$T/weft.conf" 2>"$T/log" &
P=$!
for _ in $(seq 50); do grep -q "info  listening on" "$T/log" && break; sleep 0.1; done
PORT=$(grep -o "info  listening on http://127.0.0.1:[0-9]*" "$T/log" | sed 's/.*://')
URL=http://127.0.0.1:$PORT/$POL/persons/
wrk -t2 -c100 -d1s -s "$T/random.lua" "$URL" >/dev/null # warm-up: connections open, statements prepared

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() { # the cluster's postmaster and every backend
    local t=0 p pm
    pm=$(head -1 "$T/pg/data/postmaster.pid")
    for p in $pm $(pgrep -P "$pm"); do t=$((t + $(ticks "$p"))); done
    echo $t
}
if [[ -n ${STRACE:-} ]]; then
    timeout -s INT $((S - 1)) strace -c -f -p "$P" -o "$T/strace" 2>/dev/null &
else
    perf stat -e context-switches,task-clock -p "$P" -- sleep $((S - 1)) 2>"$T/perf" &
fi
PROBE=$!
W0=$(ticks "$P") G0=$(pg_ticks)
out=$(wrk -t2 -c100 -d"${S}s" -s "$T/random.lua" "$URL")
W1=$(ticks "$P") G1=$(pg_ticks)
wait "$PROBE" 2>/dev/null || true
reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
hz=$(getconf CLK_TCK)
echo "$out" | grep -E "Requests/sec|Socket|Non-2xx" || true
awk -v r="$reqs" -v w=$((W1 - W0)) -v g=$((G1 - G0)) -v hz="$hz" 'BEGIN {
    printf "requests %d; CPU per request: weft %.0f us, PostgreSQL %.0f us\n", r, 1e6 * w / hz / r, 1e6 * g / hz / r }'
rps=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
if [[ -n ${STRACE:-} ]]; then
    # Per response: weft writes each HTTP/1.1 response with one writev, and
    # the rate under strace is not the run's average.
    awk 'NR > 2 && $NF != "total" && $4 ~ /^[0-9]+$/ { n[$NF] = $4; order[++k] = $NF }
         END { for (i = 1; i <= k && i <= 8; i++) printf "  %-16s %6.2f per request (writev = responses)\n", order[i], n[order[i]] / n["writev"] }' "$T/strace"
else
    awk -v rps="$rps" -v s=$((S - 1)) '/context-switches/ { gsub(",", "", $1); printf "context switches per request: %.1f\n", $1 / (rps * s) }' "$T/perf"
fi

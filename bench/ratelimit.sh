#!/usr/bin/env bash
#
# bench/ratelimit.sh — what a route's rate_limit costs /hello, in one run:
#
#   1. HTTP/1.1, wrk -c50, one client address (the worst case for the shared
#      table: every request of both loops takes the same set's mutex):
#      /hello without a limit, with per = "client", with per = "route"
#      (limits that never refuse: the cost of the bookkeeping, not of 429s);
#   2. HTTP/2 (h2load -c50 -m10, h2c): /hello against per = "client";
#   3. distinct clients through a trusted proxy: every request carries a new
#      X-Forwarded-For (wrk's Lua), on a listener with trusted_proxies, so the
#      table keeps missing and evicting (capacity 4096): /hello against
#      per = "client", both paying the same header walk.
#
#   bench/ratelimit.sh           # run, print a Markdown section to stdout
#   bench/ratelimit.sh --write   # ... and put it into docs/BENCHMARKS.md
#
# Environment:
#   BENCH_SECONDS  measured seconds per run (default 4; a 1 s warm-up precedes each)
#   BENCH_ROUNDS   rounds, the variants interleaved within each, their order rotated
#                  every round; medians reported, a ratio as the median of the
#                  rounds' own ratios (default 5)
#   WEFT_BUILD     build directory with server/weft and plugins/ (default <repo>/build)
#   BENCH_VARIANTS a subset of the runs (e.g. "h2.hello h2.client"); the table then lacks the others
#
# Bounded: ROUNDS x 7 runs of about BENCH_SECONDS + 1.5 s: under 4 minutes with the defaults.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build}
SECS=${BENCH_SECONDS:-4}
ROUNDS=${BENCH_ROUNDS:-5}
DOC=$ROOT/docs/BENCHMARKS.md
BEGIN_MARK='<!-- ratelimit:begin -->'
END_MARK='<!-- ratelimit:end -->'
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh" # paired_ratio

WRITE=0
case "${1:-}" in
    --write) WRITE=1 ;;
    "") ;;
    -h | --help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

log() { echo "ratelimit.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x $BUILD/server/weft ]] || die "$BUILD has no server/weft: build first"
command -v wrk >/dev/null || die "wrk is not installed"
command -v h2load >/dev/null || die "h2load is not installed (nghttp2-client)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-bench-rl.XXXXXX")
WEFT_PID=
cleanup() {
    if [[ -n $WEFT_PID ]]; then
        kill -TERM "$WEFT_PID" 2>/dev/null || true
        wait "$WEFT_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

mkdir -p "$TMP/plugins"
cp "$BUILD/server/weft" "$TMP/weft"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"

free_port() {
    local p=$1
    while [[ -n $(ss -Hltn "sport = :$p") ]]; do p=$((p + 1)); done
    echo "$p"
}
PORT=$(free_port $((31000 + $$ % 900)))
PPORT=$(free_port $((PORT + 1)))
NEVER='requests = 1000000000; per_s = 1;'
cat >"$TMP/weft.conf" <<CONF
threads = 2;
listen = ( "127.0.0.1:$PORT", { address = "127.0.0.1:$PPORT"; trusted_proxies = ["127.0.0.1"]; } );
admin = false;
plugin_dirs = ["$TMP/plugins"];
limits = { rate_limit_clients = 4096; };
log = { level = "warn"; request_id_header = "never"; };
routes = (
  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; },
  { path = "/client"; plugin = "hello"; dispatch = "reactive"; rate_limit = { per = "client"; $NEVER }; },
  { path = "/route"; plugin = "hello"; dispatch = "reactive"; rate_limit = { per = "route"; $NEVER }; }
);
CONF

"$TMP/weft" -c "$TMP/weft.conf" >"$TMP/weft.log" 2>&1 &
WEFT_PID=$!
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$PORT/hello" >/dev/null 2>&1 && break
    sleep 0.1 # poll of the server's first answer
done
curl -fsS "http://127.0.0.1:$PORT/client" >/dev/null || die "weft did not start: $(cat "$TMP/weft.log")"

cat >"$TMP/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT rps=%.1f errors=%d n=%d\n",
    summary.requests / (summary.duration / 1e6),
    e.connect + e.read + e.write + e.timeout + e.status, summary.requests))
end
LUA
# A new client address on every request: 10.a.b.c counting up from a per-thread start.
cat >"$TMP/xff.lua" <<'LUA'
local n = 0
setup = function(thread) thread:set("base", math.random(0, 2^22)) end
request = function()
  n = n + 1
  local k = (base or 0) * 64 + n
  return wrk.format(nil, nil, { ["X-Forwarded-For"] = string.format("10.%d.%d.%d",
    math.floor(k / 65536) % 256, math.floor(k / 256) % 256, k % 256) })
end
LUA
cat "$TMP/report.lua" >>"$TMP/xff.lua"

wrk_run() { # SCRIPT URL -> "rps errors requests"
    local out
    out=$(wrk -t2 -c50 -d"${SECS}s" --timeout 10s -s "$1" "$2" 2>&1) || true
    grep '^RESULT ' <<<"$out" | sed 's/RESULT //; s/[a-z_0-9]*=//g'
}
h2_run() { # URL -> "rps errors requests"
    local out
    out=$(h2load -c50 -m10 -t2 -D "$SECS" "$1" 2>&1) || true
    local rps fail
    rps=$(awk '/^finished in/ { gsub(",", ""); for (i = 1; i <= NF; i++) if ($(i) == "req/s") print $(i - 1) }' <<<"$out")
    fail=$(awk '/^requests:/ { for (i = 1; i <= NF; i++) if ($(i) == "failed,") print $(i - 1) }' <<<"$out")
    local non2xx
    non2xx=$(awk '/^status codes:/ { gsub(",", ""); print $5 + $7 + $9 }' <<<"$out")
    local total
    total=$(awk '/^requests:/ { print $2 }' <<<"$out")
    echo "${rps:-0} $(( ${fail:-0} + ${non2xx:-0} )) ${total:-0}"
}
# weft's CPU time (user + system, clock ticks): per request it is far steadier
# than requests/s on a machine whose other work takes the cores.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$WEFT_PID/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

VARIANTS=${BENCH_VARIANTS:-"h1.hello h1.client h1.route h2.hello h2.client xff.hello xff.client"}
declare -A RUNS ERRS CPUS
run_variant() { # -> "rps errors requests cpu_ticks"
    local kind=${1%%.*} route=${1#*.} c0 res
    case $kind in
        h1) wrk -t2 -c50 -d1s "http://127.0.0.1:$PORT/$route" >/dev/null 2>&1 || true
            c0=$(cpu_ticks); res=$(wrk_run "$TMP/report.lua" "http://127.0.0.1:$PORT/$route") ;;
        h2) h2load -c50 -m10 -t2 -D 1 "http://127.0.0.1:$PORT/$route" >/dev/null 2>&1 || true
            c0=$(cpu_ticks); res=$(h2_run "http://127.0.0.1:$PORT/$route") ;;
        xff) wrk -t2 -c50 -d1s -s "$TMP/xff.lua" "http://127.0.0.1:$PPORT/$route" >/dev/null 2>&1 || true
             c0=$(cpu_ticks); res=$(wrk_run "$TMP/xff.lua" "http://127.0.0.1:$PPORT/$route") ;;
    esac
    echo "$res $(( $(cpu_ticks) - c0 ))"
}
read -r -a VLIST <<<"$VARIANTS"
for round in $(seq "$ROUNDS"); do
    # Rotated, so that no variant always follows the same one; RUNS keeps
    # round order, so the i-th figures of two variants are one round's.
    for k in "${!VLIST[@]}"; do
        v=${VLIST[(k + round) % ${#VLIST[@]}]}
        read -r rps errs n ticks <<<"$(run_variant "$v")"
        us=$(awk -v t="$ticks" -v n="$n" -v u="$TICK_US" 'BEGIN { printf "%.3f", (n > 0 ? t * u / n : 0) }')
        RUNS[$v]="${RUNS[$v]:-} $rps"
        CPUS[$v]="${CPUS[$v]:-} $us"
        ERRS[$v]=$(( ${ERRS[$v]:-0} + ${errs:-0} ))
        log "round $round $v: $rps req/s, $us us CPU/request, $errs errors"
    done
done
limited=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^weft_rate_limited_total/ { s += $2 } END { print s + 0 }')
table=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^weft_rate_limit_clients / { print $2 }')
evicted=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^weft_rate_limit_evictions_total / { print $2 }')
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$WEFT_PID/status")

declare -A MED CMED
for v in $VARIANTS; do
    MED[$v]=$(median <<<"${RUNS[$v]}")
    CMED[$v]=$(median <<<"${CPUS[$v]}")
done
# "0.982 (0.951–1.010)": the median of the rounds' own ratios, their min–max.
ratio() {
    [[ $3 == "$4" ]] && { echo "1.000"; return; }
    paired_ratio "$1" "$2" | awk '{ printf "%.3f (%.3f–%.3f)", $1, $2, $3 }'
}
row() {
    printf '| %s | %s | %.0f | %s | %s | %s | %s |\n' "$1" "$2" "${MED[$3]}" "$(ratio "${RUNS[$3]}" "${RUNS[$4]}" "$3" "$4")" \
        "${CMED[$3]}" "$(ratio "${CPUS[$4]}" "${CPUS[$3]}" "$3" "$4")" "${ERRS[$3]}"
}

section=$(cat <<MD
$BEGIN_MARK
### Rate limiting's cost on /hello (bench/ratelimit.sh)

$(date -u +%Y-%m-%d), $(nproc) cores shared with other work, weft $(git -C "$ROOT" rev-parse --short HEAD), 2 event loops,
medians of $ROUNDS interleaved rounds of ${SECS} s (the order rotated every round), every variant in the same run against
the same server; a ratio is the median of the rounds' own ratios, with their min–max. The limits
never refuse (10⁹ requests a second): what is measured is the bookkeeping on every request. Target: ≥ 0.95 of /hello.
Requests/s move with whatever else the machine runs; weft's own CPU time per request (user + system, from
/proc/PID/stat over the measured seconds) does much less, so both are given, and the CPU ratio is the one to judge
(/hello's CPU per request over the variant's: 1.0 costs nothing, 0.95 is 5 % more CPU per request).

| transport | route | req/s | req/s vs /hello | µs CPU / request | CPU vs /hello | errors + non-2xx |
|---|---|---|---|---|---|---|
$(row "HTTP/1.1, wrk -c50, one client" "/hello (no limit)" h1.hello h1.hello)
$(row "HTTP/1.1, wrk -c50, one client" "per = \"client\"" h1.client h1.hello)
$(row "HTTP/1.1, wrk -c50, one client" "per = \"route\"" h1.route h1.hello)
$(row "HTTP/2, h2load -c50 -m10" "/hello (no limit)" h2.hello h2.hello)
$(row "HTTP/2, h2load -c50 -m10" "per = \"client\"" h2.client h2.hello)
$(row "a new X-Forwarded-For each request, trusted proxy" "/hello (no limit)" xff.hello xff.hello)
$(row "a new X-Forwarded-For each request, trusted proxy" "per = \"client\" (table of 4096, evicting)" xff.client xff.hello)

After the run: weft_rate_limited_total ${limited}, table ${table:-?} of 4096 clients, ${evicted:-?} evictions of a
bucket not yet full, RSS ${rss} KiB. One client is the table's worst case for contention (both loops take the same
set's mutex on every request); distinct clients are its worst case for misses (every request inserts, and evicts
once the table is full).
$END_MARK
MD
)
printf '%s\n' "$section"
if [[ $WRITE == 1 ]]; then
    replace_section "$DOC" "$BEGIN_MARK" "$END_MARK" "$section"
    log "wrote the section into $DOC"
fi

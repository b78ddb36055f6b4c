#!/usr/bin/env bash
#
# bench/auto.sh — dispatch = "auto" against the fixed policies, in one run:
#
#   1. each route alone (hello, cpu, delay at 1000 connections, locked, the
#      stall fixture blocking in usleep, persons reading PostgreSQL): requests/s
#      under every fixed policy the plugin supports and under auto; the ratio
#      auto / best fixed;
#   2. a mixed load (cpu, delay, stall, persons in the background, /hello
#      measured on its own connections): /hello's p99 with every route on
#      auto, on its best fixed policy (from 1.) and on coroutine — the pinning
#      auto removes — and on auto with the pool's workers at nice 10, below
#      the loops (pools' `nice`).
#
#   bench/auto.sh            # run, print a Markdown section to stdout
#   bench/auto.sh --write    # ... and put it into docs/BENCHMARKS.md
#
# Environment:
#   BENCH_SECONDS  measured seconds per run (default 4; a 1 s warm-up precedes each)
#   BENCH_ROUNDS   rounds of every run, interleaved; medians reported (default 3)
#   BENCH_PACE_MS  the paced /hello run's wait between an answer and the next request (default 10)
#   WEFT_BUILD     build directory with server/weft, plugins/ and tests/fixtures/stall.so
#                  (default <repo>/build; the stall fixture is built with the tests)
#
# Bounded: ROUNDS x (23 runs alone + 4 mixed), about (BENCH_SECONDS + 2) s
# each (a mixed run 2 x BENCH_SECONDS + 2): about 10 minutes with the defaults, plus a private PostgreSQL's start
# (packaging/pgdev.sh).
# Every run gets a fresh weft, so no run inherits another's auto verdict.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build}
SECS=${BENCH_SECONDS:-4}
ROUNDS=${BENCH_ROUNDS:-3}
DOC=$ROOT/docs/BENCHMARKS.md
BEGIN_MARK='<!-- auto:begin -->'
END_MARK='<!-- auto:end -->'
NCPU=$(nproc)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

WRITE=0
case "${1:-}" in
    --write) WRITE=1 ;;
    "") ;;
    -h | --help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

log() { echo "auto.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x $BUILD/server/weft && -f $BUILD/tests/fixtures/stall.so ]] ||
    die "$BUILD has no server/weft or tests/fixtures/stall.so: build with the tests first"
command -v wrk >/dev/null || die "wrk is not installed"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-bench-auto.XXXXXX")
WEFT_PID=
cleanup() {
    if [[ -n $WEFT_PID ]]; then
        kill -TERM "$WEFT_PID" 2>/dev/null || true
        wait "$WEFT_PID" 2>/dev/null || true
    fi
    "$ROOT/packaging/pgdev.sh" stop "$TMP/pg" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# A private copy: a rebuild while we measure must not swap the binary.
mkdir -p "$TMP/plugins"
cp "$BUILD/server/weft" "$TMP/weft"
cp "$BUILD"/plugins/*.so "$BUILD/tests/fixtures/stall.so" "$TMP/plugins/"

PORT=$((29000 + $$ % 900))
while [[ -n $(ss -Hltn "sport = :$PORT") ]]; do PORT=$((PORT + 1)); done

# The workloads: plugin, options, connections, fixed policies it supports.
declare -A PLUGIN=([cpu]=cpu [delay]=delay [locked]=locked [stall]=stall [persons]=persons)
declare -A OPTS=(
    [cpu]='bits = 1000; certainty = 3;'
    [delay]='ms = 200;'
    [locked]='workers = 50; hold_ms = 100;'
    [stall]='mode = "usleep"; ms = 20;'
    [persons]=''
)
declare -A CONNS=([hello]=50 [cpu]=50 [delay]=1000 [locked]=100 [stall]=50 [persons]=50)
declare -A FIXED=([hello]="pool coroutine reactive" [cpu]="pool coroutine reactive" [delay]="pool coroutine reactive"
    [locked]="pool coroutine reactive" [stall]="pool coroutine" [persons]="pool coroutine reactive")
# hello: what auto's bookkeeping costs a route that never blocks (one
# getrusage and a few atomics per slice).
ROUTES="hello cpu delay locked stall persons"

# persons reads the seeded rows of a private PostgreSQL (ids 1..1000).
"$ROOT/packaging/pgdev.sh" start "$TMP/pg" >&2
eval "$("$ROOT/packaging/pgdev.sh" env "$TMP/pg")"
POOL_NICE=0

# write_config "route=policy ..." (hello included)
write_config() {
    local routes="" kv name policy
    for kv in "$@"; do
        name=${kv%%=*} policy=${kv#*=}
        if [[ $name == hello ]]; then
            routes+="  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"$policy\"; },"$'\n'
        elif [[ $name == persons ]]; then
            routes+="  { path = \"/persons/{id}\"; plugin = \"persons\"; dispatch = \"$policy\"; methods = [\"GET\"]; },"$'\n'
        else
            routes+="  { path = \"/$name\"; plugin = \"${PLUGIN[$name]}\"; dispatch = \"$policy\"; options = { ${OPTS[$name]} }; },"$'\n'
        fi
    done
    cat >"$TMP/weft.conf" <<EOF
threads = $NCPU;
listen = [ "127.0.0.1:$PORT" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 2; };
database = { conninfo = "dbname=weft"; loop_connections = 2; statement_timeout_ms = 5000; };
pools = ({ name = "default"; size = 200; queue = 10000; nice = $POOL_NICE; });
routes = (
${routes%,$'\n'}
);
EOF
}

start_weft() {
    : >"$TMP/weft.log"
    WEFT_PLUGIN_PATH=$TMP/plugins "$TMP/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
    WEFT_PID=$!
    for ((i = 0; i < 100; i++)); do
        curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/metrics" 2>/dev/null && return
        kill -0 "$WEFT_PID" 2>/dev/null || { cat "$TMP/weft.log" >&2; die "weft exited at start"; }
        sleep 0.1
    done
    die "weft did not answer within 10 s"
}

stop_weft() {
    kill -TERM "$WEFT_PID" 2>/dev/null || true
    wait "$WEFT_PID" 2>/dev/null || true
    WEFT_PID=
}

cat >"$TMP/report.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT rps=%.1f p99_ms=%.2f errors=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(99) / 1000,
    e.connect + e.read + e.write + e.timeout + e.status))
end
EOF

# persons: a random seeded id per request, then the same report.
{
    echo 'math.randomseed(os.time())'
    echo 'request = function() return wrk.format("GET", "/persons/" .. math.random(1, 1000)) end'
    cat "$TMP/report.lua"
} >"$TMP/persons.lua"
script_for() { if [[ $1 == */persons ]]; then echo "$TMP/persons.lua"; else echo "$TMP/report.lua"; fi; }
# /hello at a fixed pace: each connection waits PACE_MS between an answer and
# its next request, so every configuration serves /hello at the same rate
# (20 connections x 1000 / PACE_MS per second, as long as answers take less)
# and their p99s compare like for like. A closed loop's p99 grows with the
# throughput the configuration reaches, which differs between them.
PACE_MS=${BENCH_PACE_MS:-10}
{
    echo "delay = function() return $PACE_MS end"
    cat "$TMP/report.lua"
} >"$TMP/paced.lua"

# wrk_run CONNS SECONDS URL -> "rps p99_ms errors"
wrk_run() {
    local out
    out=$(wrk -t2 -c"$1" -d"${2}s" --timeout 10s -s "$(script_for "$3")" "$3" 2>&1) || true
    grep '^RESULT ' <<<"$out" | sed 's/RESULT //; s/[a-z_0-9]*=//g'
}

policy_now() { # the policy whose gauge reads 1 for route $1
    local route=/$1
    [[ $1 == persons ]] && route='/persons/{id}'
    curl -fsS "http://127.0.0.1:$PORT/metrics" | grep -F "weft_route_policy{route=\"$route\"," |
        awk '$NF == 1 { sub(/.*policy="/, ""); sub(/".*/, ""); print }'
}

LOAD0=$(cut -d' ' -f1 /proc/loadavg)

# ---- 1. each route alone ----
# ROUNDS rounds, each running every route under every policy once, in turn:
# a neighbour's burst then hurts one run of each policy rather than all runs
# of one. The median of the rounds is reported.
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A RUNS RPS BEST BESTRPS AUTOAT
for ((round = 1; round <= ROUNDS; round++)); do
    for r in $ROUTES; do
        for p in ${FIXED[$r]} auto; do
            write_config "$r=$p"
            start_weft
            wrk_run "${CONNS[$r]}" 1 "http://127.0.0.1:$PORT/$r" >/dev/null # warm-up (auto decides here)
            read -r rps p99 errs <<<"$(wrk_run "${CONNS[$r]}" "$SECS" "http://127.0.0.1:$PORT/$r")"
            if [[ $p == auto ]]; then AUTOAT[$r]=$(policy_now "$r"); fi
            stop_weft
            RUNS[$r.$p]+=" $rps"
            log "round $round: $r / $p: $rps req/s, p99 $p99 ms, $errs errors$([[ $p == auto ]] && echo " (auto on ${AUTOAT[$r]})" || true)"
        done
    done
done
for r in $ROUTES; do
    for p in ${FIXED[$r]} auto; do
        RPS[$r.$p]=$(median <<<"${RUNS[$r.$p]}")
        if [[ $p != auto ]] && awk -v a="${RPS[$r.$p]}" -v b="${BESTRPS[$r]:-0}" 'BEGIN { exit !(a > b) }'; then
            BEST[$r]=$p BESTRPS[$r]=${RPS[$r.$p]}
        fi
    done
done

# ---- 2. the mixed load ----
# Background: cpu on 1 connection (about one core of work), delay on 200,
# stall on 20 (each of its requests sleeps 20 ms in usleep: on a loop thread
# that is the pinning); /hello measured on 20 connections of its own.
MIX_BG="cpu:1 delay:200 stall:20 persons:10"
mixed() { # label, then route=policy pairs
    local label=$1 bg pids=()
    shift
    write_config "$@"
    start_weft
    for bg in $MIX_BG; do
        wrk -t1 -c"${bg#*:}" -d"$((2 * SECS + 2))s" --timeout 10s -s "$(script_for "/${bg%%:*}")" \
            "http://127.0.0.1:$PORT/${bg%%:*}" >/dev/null 2>&1 &
        pids+=($!)
    done
    wrk_run 20 1 "http://127.0.0.1:$PORT/hello" >/dev/null # the background load and auto settle
    read -r rps p99 errs <<<"$(wrk_run 20 "$SECS" "http://127.0.0.1:$PORT/hello")"
    local out prps pp99 perrs
    out=$(wrk -t2 -c20 -d"${SECS}s" --timeout 10s -s "$TMP/paced.lua" "http://127.0.0.1:$PORT/hello" 2>&1) || true
    read -r prps pp99 perrs <<<"$(grep '^RESULT ' <<<"$out" | sed 's/RESULT //; s/[a-z_0-9]*=//g')"
    wait "${pids[@]}" 2>/dev/null || true
    stop_weft
    log "mixed / $label: /hello $rps req/s, p99 $p99 ms, $errs errors; paced: $prps req/s, p99 $pp99 ms, $perrs errors"
    MRPS[$label]+=" $rps" MP99[$label]+=" $p99" MPRPS[$label]+=" $prps" MPP99[$label]+=" $pp99"
}
declare -A MRPS MP99 MPRPS MPP99
for ((round = 1; round <= ROUNDS; round++)); do
    mixed auto hello=auto cpu=auto delay=auto stall=auto persons=auto
    mixed best-fixed hello="${BEST[hello]}" cpu="${BEST[cpu]}" delay="${BEST[delay]}" stall="${BEST[stall]}" \
        persons="${BEST[persons]}"
    mixed all-coroutine hello=coroutine cpu=coroutine delay=coroutine stall=coroutine persons=coroutine
    POOL_NICE=10
    mixed auto-nice-10 hello=auto cpu=auto delay=auto stall=auto persons=auto
    POOL_NICE=0
done
: >"$TMP/mixed"
for label in auto best-fixed all-coroutine auto-nice-10; do
    echo "$label $(median <<<"${MRPS[$label]}") $(median <<<"${MP99[$label]}") $(median <<<"${MPRPS[$label]}") $(median <<<"${MPP99[$label]}")" >>"$TMP/mixed"
done

# ---- the report ----
report() {
    echo "$BEGIN_MARK"
    echo "## dispatch = \"auto\" (issue 29)"
    echo
    echo "### auto against the fixed policies (bench/auto.sh)"
    echo
    echo "$(date -u +%Y-%m-%d), $NCPU cores shared with other work (load average $LOAD0 before the runs,"
    echo "$(cut -d' ' -f1 /proc/loadavg) after), median of $ROUNDS interleaved rounds of ${SECS} s per run; compare within these tables only"
    echo "(ratios), never across runs. cpu at this load is mostly noise: its work competes with everything else on"
    echo "the machine."
    echo
    echo "| route (connections) | pool | coroutine | reactive | auto (ended on) | auto / best fixed |"
    echo "|---|---|---|---|---|---|"
    for r in $ROUTES; do
        local row="| $r (${CONNS[$r]}) |"
        for p in pool coroutine reactive; do
            if [[ -n ${RPS[$r.$p]:-} ]]; then
                row+=" ${RPS[$r.$p]}$([[ ${BEST[$r]} == "$p" ]] && echo " **best**" || true) |"
            else
                row+=" — |"
            fi
        done
        row+=" ${RPS[$r.auto]} (${AUTOAT[$r]:-?}) | $(awk -v a="${RPS[$r.auto]}" -v b="${BESTRPS[$r]}" 'BEGIN { printf "%.2f", a / b }') |"
        echo "$row"
    done
    echo
    echo "Mixed load: background cpu on 1 connection, delay on 200, stall on 20, persons on 10; /hello measured on 20"
    echo "of its own. auto-nice-10: all on auto with the pool's workers at nice 10 (pools' \`nice\`), below the loops."
    echo "Best fixed (from the table above): hello ${BEST[hello]}, cpu ${BEST[cpu]}, delay ${BEST[delay]}, stall ${BEST[stall]},"
    echo "persons ${BEST[persons]}."
    echo
    echo "Two measures of /hello, one after the other under the same background: a closed loop (each of 20"
    echo "connections sends its next request as soon as the answer is in: the throughput a configuration"
    echo "reaches, and a p99 that grows with it) and a paced one (each connection waits ${PACE_MS} ms between an"
    echo "answer and its next request: the same rate for every configuration, so the p99s compare like for"
    echo "like; the target, ≤ 1.5× best-fixed, is read on it)."
    echo
    echo "| configuration | closed loop: /hello req/s | closed loop: p99 ms | paced: /hello req/s | paced: p99 ms | paced p99 / best-fixed |"
    echo "|---|---|---|---|---|---|"
    local bp
    bp=$(awk '$1 == "best-fixed" { print $5 }' "$TMP/mixed")
    while read -r label rps p99 prps pp99; do
        echo "| $label | $rps | $p99 | $prps | $pp99 | $(awk -v a="$pp99" -v b="$bp" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
    done <"$TMP/mixed"
    echo "$END_MARK"
}
report >"$TMP/section.md"
cat "$TMP/section.md"
if ((WRITE)); then
    replace_section "$DOC" "$BEGIN_MARK" "$END_MARK" "$(cat "$TMP/section.md")"
    log "written into $DOC"
fi

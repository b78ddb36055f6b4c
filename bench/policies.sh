#!/usr/bin/env bash
#
# bench/policies.sh — the three dispatch policies (pool, coroutine, reactive)
# under wrk, side by side, against the theoretical limit of each workload.
#
#   bench/policies.sh            # build, run, print a Markdown section to stdout
#   bench/policies.sh --write    # ... and put it into docs/BENCHMARKS.md
#
# Environment:
#   BENCH_SECONDS  measured seconds per run (default 10; a 2 s warm-up precedes each)
#   WEFT_BUILD     build directory (default: <repo>/build-bench, Release)
#   BENCH_PORT     loopback port to use (default: a free one in 28000..28999)
#   BENCH_RAW      directory to keep wrk's raw reports in (latency distributions)
#
# Every run gets a freshly started weft, so the peak RSS of a run is that
# run's own and not left over from an earlier one (memory a process has
# touched rarely goes back to the kernel). Progress goes to stderr.
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECONDS_PER_RUN=${BENCH_SECONDS:-10}
WARMUP_SECONDS=2
WRK_THREADS=2
WRK_TIMEOUT=10s
DOC=$ROOT/docs/BENCHMARKS.md
BEGIN_MARK='<!-- policies:begin -->'
END_MARK='<!-- policies:end -->'

# The workload parameters; the config below and the limits share them.
POOL_THREADS=200
POOL_QUEUE=10000
DELAY_MS=200
LOCKED_WORKERS=50
LOCKED_HOLD_MS=100
CPU_BITS=1000
CPU_CERTAINTY=3
NCPU=$(nproc)

WRITE=0
case "${1:-}" in
    --write) WRITE=1 ;;
    "") ;;
    -h | --help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-bench.XXXXXX")
WEFT_PID=
SAMPLER_PID=

log() { echo "policies.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# ---- cleanup: whatever happens, no weft and no sampler outlive the script ----

stop_sampler() {
    if [[ -n $SAMPLER_PID ]]; then
        kill "$SAMPLER_PID" 2>/dev/null || true
        wait "$SAMPLER_PID" 2>/dev/null || true
        SAMPLER_PID=
    fi
}

# Dies with weft's exit status and log when weft is gone unexpectedly.
check_weft_alive() {
    kill -0 "$WEFT_PID" 2>/dev/null && return
    local rc=0
    wait "$WEFT_PID" || rc=$?
    WEFT_PID=
    log "weft exited unexpectedly during $1 with status $rc$( ((rc > 128)) && echo " (signal $((rc - 128)))"); its log:"
    tail -n 40 "$TMP/weft.log" >&2
    exit 1
}

stop_weft() {
    if [[ -n $WEFT_PID ]]; then
        kill -TERM "$WEFT_PID" 2>/dev/null || true
        wait "$WEFT_PID" 2>/dev/null || true
        WEFT_PID=
    fi
}

cleanup() {
    stop_sampler
    stop_weft
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- preparation ----

# 1000 connections need 1000 client fds in wrk and as many in weft. The hard
# limit may be below 65536 for an unprivileged user: take what we may.
raise_fd_limit() {
    ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
    (($(ulimit -n) >= 2100)) || die "open-file limit $(ulimit -n) is too low for 1000 connections"
}

build_weft() {
    log "building weft (Release) in $BUILD"
    if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 ||
        ! cmake --build "$BUILD" -j"$NCPU" >>"$TMP/cmake.log" 2>&1; then
        cat "$TMP/cmake.log" >&2
        die "build failed"
    fi
    [[ -x $BUILD/server/weft ]] || die "no $BUILD/server/weft after the build"
    # Run a private copy: a rebuild of $BUILD while we measure (another
    # checkout state, another user of the same build directory) must neither
    # swap the binary nor touch the plugin directory weft watches and
    # reloads from.
    mkdir -p "$TMP/bin/plugins"
    cp "$BUILD/server/weft" "$TMP/bin/weft"
    cp "$BUILD"/plugins/*.so "$TMP/bin/plugins/"
    WEFT=$TMP/bin/weft
}

port_free() { [[ -z $(ss -Hltn "sport = :$1") ]]; }

# A port nobody listens on. weft only announces its port at log level info,
# and the runs use warn, so we choose the port rather than ask for port 0.
# Starting from a PID-derived offset keeps two benchmarks (or a test suite)
# on one machine from picking the same port: weft binds with SO_REUSEPORT,
# so a second listener would silently share the connections.
pick_port() {
    if [[ -n ${BENCH_PORT:-} ]]; then
        PORT_NO=$BENCH_PORT
        return
    fi
    local i
    for ((i = 0; i < 1000; i++)); do
        PORT_NO=$((28000 + ($$ + i) % 1000))
        port_free "$PORT_NO" && return
    done
    die "no free port in 28000..28999"
}

# The routes of etc/weft.conf, on loopback only, with the benchmark's
# parameters spelled out so that a change to etc/weft.conf cannot silently
# change what the numbers mean.
write_config() {
    local policy routes=""
    for policy in pool coroutine reactive; do
        routes+="  { path = \"/$policy/cpu\";    plugin = \"cpu\";    dispatch = \"$policy\"; methods = [\"GET\"]; options = { bits = $CPU_BITS; certainty = $CPU_CERTAINTY; }; },
  { path = \"/$policy/delay\";  plugin = \"delay\";  dispatch = \"$policy\"; methods = [\"GET\"]; options = { ms = $DELAY_MS; }; },
  { path = \"/$policy/locked\"; plugin = \"locked\"; dispatch = \"$policy\"; methods = [\"GET\"]; options = { workers = $LOCKED_WORKERS; hold_ms = $LOCKED_HOLD_MS; }; },
"
    done
    cat >"$TMP/weft.conf" <<EOF
# Written by bench/policies.sh.
threads = $NCPU;
listen = [ "127.0.0.1:$PORT_NO" ];
plugin_dirs = [ "$TMP/bin/plugins" ];
log = { level = "warn"; };
shutdown = { grace_s = 2; };   # runs end with nothing worth waiting for
pools = (
  { name = "default"; size = $POOL_THREADS; queue = $POOL_QUEUE; }
);
routes = (
  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; },
${routes%,$'\n'}
);
EOF
    # Newer weft opens an admin listener (127.0.0.1:9901) by default; the
    # benchmark wants no second listener that anything else could reach.
    # Older weft rejects the unknown key, so keep it only where it is valid.
    echo "admin = false;" >>"$TMP/weft.conf"
    if ! "$WEFT" -t -c "$TMP/weft.conf" >/dev/null 2>&1; then
        sed -i '$d' "$TMP/weft.conf"
    fi
    "$WEFT" -t -c "$TMP/weft.conf" 2>"$TMP/weft-t.log" ||
        { cat "$TMP/weft-t.log" >&2; die "the generated config is invalid"; }
}

# wrk calls done() once at the end; printing the numbers from Lua is sturdier
# than scraping wrk's human-readable report (units vary: us, ms, s).
# Latencies are in microseconds. errors.status counts responses >= 400.
write_wrk_script() {
    cat >"$TMP/report.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d connect=%d read=%d write=%d timeout=%d status=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.timeout, e.status))
end
EOF
}

# ---- the server ----

start_weft() {
    : >"$TMP/weft.log" # this run's log only
    port_free "$PORT_NO" || die "something else listens on port $PORT_NO"
    WEFT_PLUGIN_PATH=$TMP/bin/plugins "$WEFT" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
    WEFT_PID=$!
    local i
    for ((i = 0; i < 100; i++)); do
        if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_NO/hello" 2>/dev/null; then
            return
        fi
        check_weft_alive "start-up"
        sleep 0.1
    done
    die "weft did not answer on port $PORT_NO within 10 s"
}

# Peak VmRSS (KiB) of weft, sampled every 100 ms into $TMP/rss. /proc has no
# resettable high-water mark (VmHWM only grows), hence the sampling; with a
# fresh weft per run VmHWM would do too, but sampling shows the run itself.
start_sampler() {
    local pid=$1 out=$TMP/rss
    echo 0 >"$out"
    (
        # Plain bash reads: no fork per sample apart from sleep, so the
        # sampler takes next to nothing from the two cores it shares.
        peak=0
        while [[ -r /proc/$pid/status ]]; do
            while read -r key value _; do
                if [[ $key == VmRSS: ]] && ((value > peak)); then
                    peak=$value
                    echo "$peak" >"$out"
                fi
            done <"/proc/$pid/status" 2>/dev/null || true
            sleep 0.1
        done
    ) &
    SAMPLER_PID=$!
}

# CPU accounting, to tell a slow server from a starved one: weft's own CPU
# time and the whole machine's busy time over each measured run.
CLK_TCK=$(getconf CLK_TCK)

# utime + stime of process $1 in clock ticks: fields 14 and 15 of
# /proc/PID/stat, counted after the ")" that ends the command name.
proc_ticks() {
    local stat fields
    stat=$(<"/proc/$1/stat")
    read -ra fields <<<"${stat##*) }"
    echo $((fields[11] + fields[12]))
}

# Busy clock ticks of all CPUs together (everything but idle and iowait).
machine_busy_ticks() {
    local user nice system irq softirq steal
    # cpu  user nice system idle iowait irq softirq steal guest guest_nice
    read -r _ user nice system _ _ irq softirq steal _ </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}

# CPU seconds (user + sys) of this shell's reaped children, from the file
# `times` wrote: the difference across a wrk run is wrk's CPU (the other
# children in between are a few short awks). `times` itself must run in this
# shell, never inside $(...): a subshell's children start at zero.
children_cpu() {
    awk 'NR == 2 {
        t = 0
        for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
        print t
    }' "$1"
}

now_ns() { date +%s%N; }

# Anything else busy on the machine skews every number here, most of all cpu
# (one busy neighbour takes half of a 2-core machine). Measure for 2 s before
# the runs and say so in the report rather than publish skewed numbers quietly.
check_quiet() {
    local b0 b1
    b0=$(machine_busy_ticks)
    sleep 2
    b1=$(machine_busy_ticks)
    IDLE_BUSY=$(awk -v t=$((b1 - b0)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz / 2 }')
    if awk -v b="$IDLE_BUSY" 'BEGIN { exit !(b > 0.15) }'; then
        log "WARNING: the machine is not idle before the runs ($IDLE_BUSY cores busy); busiest processes:"
        ps -eo pid,pcpu,etime,args --sort=-pcpu | head -n 4 | cut -c1-120 >&2
    fi
}

# ---- one run ----

# run_one NAME POLICY PATH CONNECTIONS LIMIT_RPS
# Appends a line to $TMP/results:
#   name policy conns rps limit p50_ms p99_ms errors rss_kib weft_cores wrk_cores other_cores
run_one() {
    local name=$1 policy=$2 path=$3 conns=$4 limit=$5
    local url="http://127.0.0.1:$PORT_NO$path"
    log "$name / $policy / $conns connections: warm-up ${WARMUP_SECONDS}s, run ${SECONDS_PER_RUN}s"
    start_weft
    # Warm-up, not recorded: pool threads spawned, coroutine stacks and
    # allocator arenas touched, connection set-up out of the way.
    wrk -t"$WRK_THREADS" -c"$conns" -d"${WARMUP_SECONDS}s" --timeout "$WRK_TIMEOUT" "$url" >/dev/null 2>&1 || true
    # Requests the warm-up abandoned may still be queued (pool queue, lock
    # queues); give them one hold/delay period and a bit to drain.
    sleep 1
    check_weft_alive "the warm-up of $name/$policy/$conns"
    start_sampler "$WEFT_PID"
    local t0 weft0 busy0 wrk0 t1 weft1 busy1 wrk1
    times >"$TMP/times.0"
    t0=$(now_ns) weft0=$(proc_ticks "$WEFT_PID") busy0=$(machine_busy_ticks)
    wrk -t"$WRK_THREADS" -c"$conns" -d"${SECONDS_PER_RUN}s" --timeout "$WRK_TIMEOUT" --latency \
        -s "$TMP/report.lua" "$url" >"$TMP/wrk.out" 2>&1 || { cat "$TMP/wrk.out" >&2; die "wrk failed"; }
    t1=$(now_ns) weft1=$(proc_ticks "$WEFT_PID") busy1=$(machine_busy_ticks)
    times >"$TMP/times.1"
    wrk0=$(children_cpu "$TMP/times.0") wrk1=$(children_cpu "$TMP/times.1")
    stop_sampler
    check_weft_alive "$name/$policy/$conns"
    stop_weft
    if [[ -n ${BENCH_RAW:-} ]]; then # wrk's own report, with the full latency distribution
        mkdir -p "$BENCH_RAW"
        cp "$TMP/wrk.out" "$BENCH_RAW/$name-$policy-$conns.txt"
    fi

    local line
    line=$(grep '^RESULT ' "$TMP/wrk.out") || { cat "$TMP/wrk.out" >&2; die "no result from wrk"; }
    # Requests/s from the count and the exact duration (what wrk prints too).
    # CPU in cores: ticks / CLK_TCK / elapsed seconds. "Other" is whatever
    # the machine spent besides weft and wrk: a neighbour, or the kernel's
    # softirq work for loopback traffic (not charged to either process).
    local secs weft_cores wrk_cores other_cores
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')
    weft_cores=$(awk -v t=$((weft1 - weft0)) -v hz="$CLK_TCK" -v s="$secs" 'BEGIN { printf "%.2f", t / hz / s }')
    wrk_cores=$(awk -v a="$wrk0" -v b="$wrk1" -v s="$secs" 'BEGIN { printf "%.2f", (b - a) / s }')
    other_cores=$(awk -v t=$((busy1 - busy0)) -v hz="$CLK_TCK" -v s="$secs" -v w="$weft_cores" -v k="$wrk_cores" \
        'BEGIN { o = t / hz / s - w - k; printf "%.2f", o < 0 ? 0 : o }')
    awk -v name="$name" -v policy="$policy" -v conns="$conns" -v limit="$limit" -v rss="$(cat "$TMP/rss")" \
        -v wc="$weft_cores" -v kc="$wrk_cores" -v oc="$other_cores" '
        {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            rps = v["requests"] / (v["duration_us"] / 1e6)
            errors = v["connect"] + v["read"] + v["write"] + v["timeout"] + v["status"]
            printf "%s %s %d %.1f %s %.2f %.2f %d %d %s %s %s\n", name, policy, conns, rps, limit,
                   v["p50_us"] / 1000, v["p99_us"] / 1000, errors, rss, wc, kc, oc
        }' <<<"$line" >>"$TMP/results"
    log "  $(tail -n1 "$TMP/results")"
}

# ---- side measurements ----

# Single-core primes/s of exactly the cpu plugin's method (bench/primes.c
# "gmp-bpsw": same sieve, same test). The cpu limit is that times the CPU
# count: an upper bound that assumes weft has every core to itself.
measure_primes() {
    PRIMES_US='' PRIMES_OTHER=''
    local flags
    read -ra flags <<<"$(pkg-config --cflags --libs gmp libcrypto 2>/dev/null || true)"
    if gcc -O2 -std=gnu11 "$ROOT/bench/primes.c" -o "$TMP/primes" "${flags[@]}" 2>"$TMP/primes-build.log"; then
        log "measuring single-core primes/s (bench/primes.c gmp-bpsw, 400 primes)"
        # A fixed seed walks the same candidates every time, so runs differ
        # only by the machine. The bench times wall-clock, so a neighbour on
        # the other core matters too: note how busy the rest of the machine
        # was (busy cores minus the one the bench uses).
        local t0 b0 t1 b1
        t0=$(now_ns) b0=$(machine_busy_ticks)
        PRIMES_US=$("$TMP/primes" -n 400 -S 1 -b "$CPU_BITS" -c "$CPU_CERTAINTY" gmp-bpsw |
            awk '$1 == "gmp-bpsw" { print $2 }')
        t1=$(now_ns) b1=$(machine_busy_ticks)
        PRIMES_OTHER=$(awk -v t=$((b1 - b0)) -v hz="$CLK_TCK" -v s=$((t1 - t0)) \
            'BEGIN { o = t / hz / (s / 1e9) - 1; printf "%.2f", o < 0 ? 0 : o }')
    else
        log "bench/primes.c does not build (needs libgmp-dev, libssl-dev): cpu has no limit"
    fi
}

measure_coro_switch() {
    CORO_SWITCH=
    local sw=() # the CPU's switch, if weft has one (else coro.c uses swapcontext)
    [[ -f $ROOT/server/dispatch/coro_switch_$(uname -m).S ]] && sw=("$ROOT/server/dispatch/coro_switch_$(uname -m).S")
    if gcc -O2 -I "$ROOT/server" -I "$ROOT/server/include" "$ROOT/server/dispatch/coro.c" "$ROOT/server/base/log.c" \
        "$ROOT/server/base/sigsafe.c" "$ROOT/server/base/logline.c" "${sw[@]}" "$ROOT/bench/coro_switch.c" -lm -o "$TMP/coro_switch" 2>"$TMP/coro-build.log"; then
        log "running bench/coro_switch"
        CORO_SWITCH=$("$TMP/coro_switch")
    else
        log "bench/coro_switch does not build; skipped"
    fi
}

# ---- the report ----

cpu_model() { awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo; }

# Markdown section for stdout and docs/BENCHMARKS.md.
report() {
    local commit dirty=""
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$ROOT" diff --quiet HEAD 2>/dev/null || dirty=" (with uncommitted changes)"
    echo "### Results ($(date -u +%Y-%m-%d), commit $commit$dirty)"
    echo
    echo "$NCPU × $(cpu_model), $(uname -r); $("$WEFT" --version); $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2)."
    echo "Each run: fresh weft, ${WARMUP_SECONDS} s warm-up (not recorded), then \`wrk -t$WRK_THREADS -c<conns> -d${SECONDS_PER_RUN}s --timeout $WRK_TIMEOUT --latency\`."
    echo "Errors = socket errors (connect, read, write, timeout) + responses ≥ 400. Peak RSS = highest VmRSS of weft sampled every 100 ms during the measured run."
    if awk -v b="$IDLE_BUSY" 'BEGIN { exit !(b > 0.15) }'; then
        echo
        echo "**Warning: the machine was not idle before the runs ($IDLE_BUSY cores busy without weft or wrk); every number below is skewed by that.**"
        echo
    else
        echo "Machine load before the runs, without weft or wrk: $IDLE_BUSY cores."
    fi
    echo "CPU columns: cores busy on average over the measured run — weft, wrk, and other (the rest of the machine: kernel loopback work not charged to either, or a neighbour; bold above 0.3)."
    echo
    echo "| workload | policy | conns | req/s | limit req/s | % of limit | p50 ms | p99 ms | errors | peak RSS MiB | CPU weft | CPU wrk | CPU other |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk '{
        pct = ($5 == "-") ? "–" : sprintf("%.1f %%", 100 * $4 / $5)
        lim = ($5 == "-") ? "–" : sprintf("%.0f", $5)
        other = ($12 > 0.3) ? sprintf("**%.2f**", $12) : sprintf("%.2f", $12)
        printf "| %s | %s | %d | %.0f | %s | %s | %.1f | %.1f | %d | %.1f | %.2f | %.2f | %s |\n",
               $1, $2, $3, $4, lim, pct, $6, $7, $8, $9 / 1024, $10, $11, other
    }' "$TMP/results"
    echo
    echo "Limits: delay = min(conns, pool threads) / ${DELAY_MS} ms for \`pool\` ($POOL_THREADS threads), conns / ${DELAY_MS} ms otherwise;"
    echo "locked = $LOCKED_WORKERS workers / ${LOCKED_HOLD_MS} ms for every policy;"
    if [[ -n $PRIMES_US ]]; then
        echo "cpu = $NCPU cores × $(awk -v us="$PRIMES_US" 'BEGIN { printf "%.1f", 1e6 / us }') primes/s per core (bench/primes.c \`gmp-bpsw\`, the plugin's method: mean $PRIMES_US µs per $CPU_BITS-bit prime over 400 primes, measured just before the runs while the rest of the machine kept $PRIMES_OTHER cores busy) —"
        echo "an upper bound, since wrk shares those cores, and itself ±5 % (the search time per prime is very spread out);"
    else
        echo "cpu: no limit (bench/primes.c could not be built to measure single-core primes/s);"
    fi
    echo "hello: no limit (pure per-request overhead)."
    echo
    echo "| target | measured | |"
    echo "|---|---|---|"
    target_row "coroutine delay, 1000 conns: ≥ 95 % of limit, no errors" delay coroutine 1000 pct_noerr
    target_row "reactive delay, 1000 conns: ≥ 95 % of limit, no errors" delay reactive 1000 pct_noerr
    target_row "pool locked, 200 conns: ≥ 95 % of limit" locked pool 200 pct
    target_row "coroutine locked, 200 conns: ≥ 95 % of limit" locked coroutine 200 pct
    target_row "reactive locked, 200 conns: ≥ 95 % of limit" locked reactive 200 pct
    target_row "server RSS, 1000 concurrent coroutine delays: ≤ 32 MiB" delay coroutine 1000 rss
    if [[ -n $CORO_SWITCH ]]; then
        echo
        echo "Coroutine switch (\`bench/coro_switch\`, gcc -O2):"
        echo
        echo '```text'
        echo "$CORO_SWITCH"
        echo '```'
    fi
}

# target_row TEXT NAME POLICY CONNS KIND — one line of the targets table.
target_row() {
    local text=$1 name=$2 policy=$3 conns=$4 kind=$5
    awk -v text="$text" -v name="$name" -v policy="$policy" -v conns="$conns" -v kind="$kind" '
        $1 == name && $2 == policy && $3 == conns {
            pct = 100 * $4 / $5
            if (kind == "rss") {
                ok = $9 <= 32 * 1024
                m = sprintf("%.1f MiB", $9 / 1024)
            } else {
                ok = pct >= 95 && (kind != "pct_noerr" || $8 == 0)
                m = sprintf("%.1f %% of limit, %d errors", pct, $8)
            }
            printf "| %s | %s | %s |\n", text, m, ok ? "**met**" : "**missed**"
            found = 1
        }
        END { if (!found) printf "| %s | not run | – |\n", text }' "$TMP/results"
}

# The intro of a new docs/BENCHMARKS.md; only written when the file is missing.
doc_intro() {
    cat <<EOF
# Benchmarks

## Dispatch policies

\`bench/policies.sh\` compares weft's three dispatch policies — \`pool\` (a
fixed pool of $POOL_THREADS blocking worker threads), \`coroutine\` (handlers on
coroutines of the loop threads) and \`reactive\` (callbacks on the event loop) —
on the plugins of \`etc/weft.conf\`:

- **delay**: wait ${DELAY_MS} ms, then answer (I/O-bound; tests how many waits a
  policy can keep in flight).
- **locked**: take one of $LOCKED_WORKERS mutexes, hold it ${LOCKED_HOLD_MS} ms (contention).
- **cpu**: find a random $CPU_BITS-bit probable prime, certainty $CPU_CERTAINTY (CPU-bound).
- **hello**: a constant answer (per-request overhead; reactive only).

For every run it records requests/s, p50 and p99 latency, errors and weft's
peak resident memory, and sets requests/s against the workload's theoretical
limit.

Machine: $NCPU vCPUs, $(cpu_model), Debian 12. Command:

\`\`\`sh
BENCH_SECONDS=10 bench/policies.sh --write
\`\`\`

It builds weft in Release mode (\`build-bench\`, or \`\$WEFT_BUILD\`), writes
its own configuration ($NCPU loop threads, log level warn, 127.0.0.1 only) and
replaces the section between the markers below.

**These numbers are noisy.** The machine is a shared 2-core VM and wrk runs on
the same two cores as weft, so the load generator takes CPU from the server
(which matters most for cpu and hello) and neighbours on the host add jitter.
Compare policies within one run; treat differences of a few percent between
runs as noise.

$BEGIN_MARK
$END_MARK
EOF
}

# Replaces the text between the markers, keeping everything around them.
write_doc() {
    local section=$1
    if [[ ! -f $DOC ]]; then
        doc_intro >"$DOC"
    fi
    if ! grep -qxF "$BEGIN_MARK" "$DOC" || ! grep -qxF "$END_MARK" "$DOC"; then
        die "$DOC lacks the $BEGIN_MARK / $END_MARK marker lines"
    fi
    awk -v begin="$BEGIN_MARK" -v end="$END_MARK" -v file="$section" '
        $0 == begin { print; while ((getline l < file) > 0) print l; skip = 1; next }
        $0 == end { skip = 0 }
        !skip { print }' "$DOC" >"$TMP/doc.new"
    cat "$TMP/doc.new" >"$DOC"
    log "wrote the results into $DOC"
}

# ---- main ----

main() {
    command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
    command -v curl >/dev/null || die "curl is not installed"
    raise_fd_limit
    build_weft
    pick_port
    write_config
    write_wrk_script
    : >"$TMP/results"

    check_quiet
    # Side measurements first, on a quiet machine.
    measure_coro_switch
    measure_primes
    local cpu_limit=-
    if [[ -n $PRIMES_US ]]; then
        cpu_limit=$(awk -v us="$PRIMES_US" -v n="$NCPU" 'BEGIN { printf "%.1f", n * 1e6 / us }')
    fi

    local policy pool_cap
    for policy in pool coroutine reactive; do
        for conns in 200 1000; do
            # A pool keeps at most $POOL_THREADS delays in flight; the rest queue.
            if [[ $policy == pool ]]; then
                pool_cap=$((conns < POOL_THREADS ? conns : POOL_THREADS))
            else
                pool_cap=$conns
            fi
            run_one delay "$policy" "/$policy/delay" "$conns" $((pool_cap * 1000 / DELAY_MS))
        done
        run_one locked "$policy" "/$policy/locked" 200 $((LOCKED_WORKERS * 1000 / LOCKED_HOLD_MS))
        run_one cpu "$policy" "/$policy/cpu" 50 "$cpu_limit"
    done
    run_one hello reactive /hello 100 -

    report >"$TMP/section.md"
    cat "$TMP/section.md"
    if ((WRITE)); then
        write_doc "$TMP/section.md"
    fi
}

main

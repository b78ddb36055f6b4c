#!/usr/bin/env bash
#
# bench/port.sh — the seed table before and after the port to the vendored
# h2o (issue 25), in one run: the last commit on Debian's libh2o 2.2.5 and
# the current tree are built (Release) and measured side by side, run by run.
#
#   bench/port.sh            # build both, run, print a Markdown section
#   bench/port.sh --write    # ... and put it into docs/BENCHMARKS.md
#
# Rows: bench/policies.sh's workloads (delay at 200 and 1,000 connections,
# locked, cpu per policy, hello), persons per policy (private PostgreSQL,
# random ids 1..1000, 100 connections) and the idle RSS of bench/rss_idle.sh.
# Every row runs old, new, new, old (PORT_ROUNDS times),
# each run on a freshly started server, so the machine's noise (other jobs
# on the same cores) hits both builds alike; the ratio new / old per row is
# what counts, and the min–max of each side is the noise it is judged by.
#
# Environment:
#   BENCH_SECONDS  measured seconds per run (default 5; 1 s warm-up each).
#                  17 rows × 4 × PORT_ROUNDS runs of ~8 s: ~9 minutes with
#                  the defaults, plus the builds (~1 minute when incremental).
#   PORT_OLD       the commit before the port (default 0788fec). It builds
#                  only against Debian's libh2o-evloop-dev 2.2.5.
#   PORT_ONLY      an extended regex: only the rows whose "workload/policy/conns"
#                  (idle RSS: "idle") matches run, e.g. PORT_ONLY=^cpu/ to look
#                  again at one row; the section is then printed, never written
#   PORT_ROUNDS    old-new-new-old rounds per row (default 1; 2 on a loaded
#                  machine gives 4 runs per side and takes ~17 minutes)
#   WEFT_BUILD     the current tree's build directory (default <repo>/build-bench)
#   PORT_WORK      where the old commit's worktree and its build go
#                  (default: a temporary directory, removed at the end; give
#                  one to keep the builds for the next run)
#
set -euo pipefail
# shellcheck disable=SC2154 # free_port (r2lib.sh) sets the port variables by name

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${BENCH_SECONDS:-5}
OLD=${PORT_OLD:-0788fec}
ROUNDS=${PORT_ROUNDS:-1}
WARMUP=1
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup port "$@"
WORK=${PORT_WORK:-$TMP/work}
NEW_BUILD=${WEFT_BUILD:-$ROOT/build-bench}
OLD_SRC=$WORK/old-src
# The worktree lives in the repository's list until removed: remove it when
# it is ours to remove (a temporary PORT_WORK), whatever ends the script.
drop_worktree() {
    local rc=$? # the script's status, which bench_cleanup exits with
    if [[ -z ${PORT_WORK:-} && -d $OLD_SRC ]]; then
        git -C "$ROOT" worktree remove --force "$OLD_SRC" >/dev/null 2>&1 || true
        git -C "$ROOT" worktree prune >/dev/null 2>&1 || true
    fi
    set +e # bench_cleanup reads the status from $?: set it, without errexit ending this trap
    (exit "$rc")
    bench_cleanup
}
trap drop_worktree EXIT

for t in wrk curl git cmake pkg-config; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
pkg-config --exists libh2o-evloop ||
    die "commit $OLD builds only against Debian's libh2o 2.2.5, which is not installed here: apt-get install libh2o-evloop-dev (Debian 12; Debian 13 has no h2o package, so the comparison runs on Debian 12 only)"
OLD_FULL=$(git -C "$ROOT" rev-parse --verify "$OLD^{commit}") || die "no commit $OLD in $ROOT"
NEW_FULL=$(git -C "$ROOT" rev-parse HEAD)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
(($(ulimit -n) >= 2100)) || die "open-files limit $(ulimit -n) is too low for 1000 connections"

# ---- the two builds ----

build() { # SRC BUILD_DIR TAG — Release, no tests; a private copy of weft and its plugins in $TMP/TAG
    log "building $3 ($(git -C "$1" rev-parse --short HEAD)$(git -C "$1" diff --quiet HEAD 2>/dev/null || echo ", with uncommitted changes")) in $2"
    if ! cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake-$3.log" 2>&1 ||
        ! cmake --build "$2" -j"$(nproc)" >>"$TMP/cmake-$3.log" 2>&1; then
        tail -n 40 "$TMP/cmake-$3.log" >&2
        die "the $3 build failed"
    fi
    mkdir -p "$TMP/$3/plugins"
    cp "$2/server/weft" "$TMP/$3/weft"
    cp "$2"/plugins/*.so "$TMP/$3/plugins/"
}
mkdir -p "$WORK"
if [[ ! -d $OLD_SRC ]]; then
    git -C "$ROOT" worktree add --detach "$OLD_SRC" "$OLD_FULL" >/dev/null 2>&1 || die "git worktree add $OLD_SRC $OLD failed"
fi
[[ $(git -C "$OLD_SRC" rev-parse HEAD) == "$OLD_FULL" ]] || die "$OLD_SRC is not at $OLD"
t_build=$(date +%s)
build "$OLD_SRC" "$WORK/build-old" old
build "$ROOT" "$NEW_BUILD" new
log "builds took $(($(date +%s) - t_build)) s"
chmod 755 "$TMP"

# ---- configurations: the same text for both builds ----

free_port PORT
NCPU=$(nproc)
conf() { # FILE TAG ROUTES [EXTRA] — policies.sh's settings, this build's plugins
    cat >"$1" <<EOF
threads = $NCPU;
listen = [ "127.0.0.1:$PORT" ];
plugin_dirs = [ "$TMP/$2/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
pools = ({ name = "default"; size = 200; queue = 10000; });
${4:-}
routes = (
$3
);
EOF
    "$TMP/$2/weft" -t -c "$1" >"$TMP/conf-check.log" 2>&1 || { cat "$TMP/conf-check.log" >&2; die "$2 rejects $1"; }
}
seed_routes='  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; }'
for p in pool coroutine reactive; do
    seed_routes+=",
  { path = \"/$p/cpu\"; plugin = \"cpu\"; dispatch = \"$p\"; methods = [\"GET\"]; options = { bits = 1000; certainty = 3; }; },
  { path = \"/$p/delay\"; plugin = \"delay\"; dispatch = \"$p\"; methods = [\"GET\"]; options = { ms = 200; }; },
  { path = \"/$p/locked\"; plugin = \"locked\"; dispatch = \"$p\"; methods = [\"GET\"]; options = { workers = 50; hold_ms = 100; }; }"
done
persons_routes='  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; }'
for p in pool coroutine reactive; do
    persons_routes+=",
  { path = \"/$p/persons/{id}\"; plugin = \"persons\"; dispatch = \"$p\"; methods = [\"GET\"]; }"
done

log "private PostgreSQL for persons"
"$ROOT/packaging/pgdev.sh" start "$TMP/pg" >/dev/null
eval "$("$ROOT/packaging/pgdev.sh" env "$TMP/pg")"
for tag in old new; do
    conf "$TMP/seed-$tag.conf" "$tag" "$seed_routes"
    conf "$TMP/persons-$tag.conf" "$tag" "$persons_routes" 'database = { conninfo = "dbname=weft"; };'
done
wrk_lua

# ---- one run ----

CLK_TCK=$(getconf CLK_TCK)
proc_ticks() { local f; read -ra f <<<"$(sed 's/.*) //' "/proc/$1/stat")"; echo $((f[11] + f[12])); }

# run_once TAG KIND PATH CONNS [SCRIPT] — a fresh weft of build TAG, warm-up,
# one measured wrk run. Sets RUN_OUT to "rps p50=ms p99=ms errors=N
# rss_mib=peak cpu_us=µs/req". Runs in this shell (never in $(...)), so that
# PIDS knows the server and an interrupted run leaves none behind.
run_once() {
    local tag=$1 kind=$2 path=$3 conns=$4 script=${5:-} pid t0 out
    [[ -n $script ]] || script=$TMP/report.lua
    "$TMP/$tag/weft" -c "$TMP/$kind-$tag.conf" 2>>"$TMP/weft-$tag.log" &
    pid=$!
    PIDS+=("$pid")
    wait_http "http://127.0.0.1:$PORT/hello"
    wrk -t2 -c"$conns" -d"${WARMUP}s" --timeout 10s -s "$script" "http://127.0.0.1:$PORT$path" >/dev/null 2>&1 || true
    sleep 1 # what the warm-up left queued (pool queue, lock queues) drains
    kill -0 "$pid" 2>/dev/null || die "the $tag weft died in the warm-up of $path (log: $TMP/weft-$tag.log)"
    t0=$(proc_ticks "$pid")
    out=$(run_wrk "$conns" "$SECS" "http://127.0.0.1:$PORT$path" "$script")
    kill -0 "$pid" 2>/dev/null || die "the $tag weft died under $path: $(tail -n 20 "$TMP/weft-$tag.log")"
    # A fresh server per run: its VmHWM is this run's peak (warm-up included).
    RUN_OUT=$(awk -v o="$out" -v t=$(($(proc_ticks "$pid") - t0)) -v hz="$CLK_TCK" -v s="$SECS" -v h="$(hwm_kib "$pid")" \
        'BEGIN { split(o, f, " "); printf "%s rss_mib=%.1f cpu_us=%.1f\n", o, h / 1024, (f[1] > 0) ? t / hz * 1e6 / (f[1] * s) : 0 }')
    stop_pid "$pid"
    local keep=() q
    for q in "${PIDS[@]}"; do [[ $q == "$pid" ]] || keep+=("$q"); done
    PIDS=("${keep[@]}")
}

# ---- the rows ----

# median/min/max of the first field of ";"-separated run lines, or of FIELD=
sidestat() { # LINES [FIELD]
    local v
    if [[ -n ${2:-} ]]; then
        v=$(tr ';' '\n' <<<"$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }')
    else
        v=$(tr ';' '\n' <<<"$1" | awk 'NF { print $1 }')
    fi
    # shellcheck disable=SC2086
    stats $v
}
pair() { awk -v f="$1" -v a="$2" -v b="$3" 'BEGIN { printf f " / " f, a, b }'; } # FORMAT OLD NEW
ROWS=""
BAD=""
# row NAME POLICY CONNS KIND PATH [SCRIPT]
row() {
    local name=$1 policy=$2 conns=$3 kind=$4 path=$5 script=${6:-} r tag old="" new=""
    [[ -z ${PORT_ONLY:-} || $name/$policy/$conns =~ $PORT_ONLY ]] || return 0
    log "$name / $policy / $conns: old and new, $ROUNDS × 2 runs of ${SECS}s each"
    for ((r = 0; r < ROUNDS; r++)); do
        for tag in old new new old; do
            run_once "$tag" "$kind" "$path" "$conns" "$script"
            if [[ $tag == old ]]; then old+="$RUN_OUT;"; else new+="$RUN_OUT;"; fi
        done
    done
    local om omin omax nm nmin nmax
    read -r om omin omax _ <<<"$(sidestat "$old")"
    read -r nm nmin nmax _ <<<"$(sidestat "$new")"
    local orss nrss op99 np99 ocpu ncpu oerr nerr
    orss=$(sidestat "$old" rss_mib | cut -d' ' -f1) nrss=$(sidestat "$new" rss_mib | cut -d' ' -f1)
    op99=$(sidestat "$old" p99 | cut -d' ' -f1) np99=$(sidestat "$new" p99 | cut -d' ' -f1)
    ocpu=$(sidestat "$old" cpu_us | cut -d' ' -f1) ncpu=$(sidestat "$new" cpu_us | cut -d' ' -f1)
    oerr=$(sidestat "$old" errors | cut -d' ' -f3) nerr=$(sidestat "$new" errors | cut -d' ' -f3)
    # Worse beyond noise: req/s down by more than 5 % with the two sides'
    # ranges apart, peak RSS up by more than 10 % and 1 MiB, or errors new.
    local verdict
    verdict=$(awk -v om="$om" -v omin="$omin" -v nm="$nm" -v nmax="$nmax" -v orss="$orss" -v nrss="$nrss" \
        -v oe="$oerr" -v ne="$nerr" 'BEGIN {
            v = ""
            if (nm < 0.95 * om && nmax < omin) v = v sprintf("req/s %.0f %%", 100 * (nm / om - 1))
            if (nrss > 1.1 * orss && nrss - orss > 1) v = v (v == "" ? "" : ", ") sprintf("RSS +%.1f MiB", nrss - orss)
            if (ne > oe) v = v (v == "" ? "" : ", ") sprintf("errors %d", ne)
            print (v == "") ? "within noise" : "**worse: " v "**" }')
    [[ $verdict == within* ]] || BAD+="$name/$policy/$conns "
    ROWS+="| $name | $policy | $conns | $(fmt "$om" "$omin" "$omax") | $(fmt "$nm" "$nmin" "$nmax") | $(awk -v a="$nm" -v b="$om" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }') | $(pair %.1f "$op99" "$np99") | $(pair %.1f "$ocpu" "$ncpu") | $(pair %.1f "$orss" "$nrss") | $oerr / $nerr | $verdict |"$'\n'
    log "  old $om ($omin–$omax) new $nm ($nmin–$nmax): $verdict"
}

LOAD_BEFORE=$(uptime | sed 's/.*load average: //')
t_run=$(date +%s)
for p in pool coroutine reactive; do
    row delay "$p" 200 seed "/$p/delay"
    row delay "$p" 1000 seed "/$p/delay"
    row locked "$p" 200 seed "/$p/locked"
    row cpu "$p" 50 seed "/$p/cpu"
done
row hello reactive 100 seed /hello
for p in pool coroutine reactive; do
    row persons "$p" 100 persons "/$p/persons/" "$TMP/random.lua"
done

# Idle RSS: bench/rss_idle.sh (etc/weft.conf of each tree without its persons
# routes, no PG* variable) on each binary, old and new alternating, 3 each.
if [[ -z ${PORT_ONLY:-} || idle =~ $PORT_ONLY ]]; then
log "idle RSS (bench/rss_idle.sh), old and new alternating"
idle() { # RSS_IDLE_SH WEFT — "rss anon file" in KiB
    "$1" "$2" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } print v["rss_kib"], v["anon_kib"], v["file_kib"] }'
}
rss_old=() rss_new=() ao=() an=() fo=() fn=()
for _ in 1 2 3; do
    read -r r a f <<<"$(idle "$OLD_SRC/bench/rss_idle.sh" "$WORK/build-old/server/weft")"
    rss_old+=("$r") ao+=("$a") fo+=("$f")
    read -r r a f <<<"$(idle "$ROOT/bench/rss_idle.sh" "$NEW_BUILD/server/weft")"
    rss_new+=("$r") an+=("$a") fn+=("$f")
done
read -r om omin omax _ <<<"$(stats "${rss_old[@]}")"
read -r nm nmin nmax _ <<<"$(stats "${rss_new[@]}")"
rss_verdict=$(awk -v o="$om" -v n="$nm" 'BEGIN { print (n > 1.1 * o && n - o > 1024) ? sprintf("**worse: +%.1f MiB**", (n - o) / 1024) : "within noise" }')
[[ $rss_verdict == within* ]] || BAD+="idle-RSS "
mib() { awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f (%.1f–%.1f)", m / 1024, a / 1024, b / 1024 }'; }
med_mib() { stats "$@" | awk '{ printf "%.1f", $1 / 1024 }'; }
ROWS+="| idle RSS MiB (bench/rss_idle.sh, 3 each) | – | – | $(mib "$om" "$omin" "$omax") | $(mib "$nm" "$nmin" "$nmax") | $(awk -v a="$nm" -v b="$om" 'BEGIN { printf "%.2f", a / b }') | – | – | anon $(med_mib "${ao[@]}") / $(med_mib "${an[@]}"), file $(med_mib "${fo[@]}") / $(med_mib "${fn[@]}") | – | $rss_verdict |"$'\n'
fi
LOAD_AFTER=$(uptime | sed 's/.*load average: //')
RUN_S=$(($(date +%s) - t_run))

BEGIN_MARK='<!-- port-seed:begin -->'
END_MARK='<!-- port-seed:end -->'
SECTION="$BEGIN_MARK
### Seed table: the last commit on libh2o 2.2.5 against the vendored h2o, one run

old = $(git -C "$ROOT" rev-parse --short "$OLD_FULL") (Debian's libh2o-evloop 2.2.5), new = $(git -C "$ROOT" rev-parse --short "$NEW_FULL") (third_party/h2o),
both Release builds of this run, the same configuration text ($NCPU loops, pool of 200, policies.sh's workloads; persons
with the default \`database\` settings against the private PostgreSQL of \`packaging/pgdev.sh\`, random ids 1..1000).
Every row: old, new, new, old × $ROUNDS, each run a fresh server, ${WARMUP} s warm-up then \`wrk -t2 -c<conns> -d${SECS}s\`;
req/s median (min–max) of $((ROUNDS * 2)) runs per side, the other columns medians (errors: the most of any run).
CPU µs/req: weft's own CPU time over the run per request (for delay and locked it is tiny: they wait).
Peak RSS: VmHWM of the run's fresh server. A row is **worse** when new's req/s is more than 5 % below old's with
the two ranges apart, its peak RSS more than 10 % and 1 MiB above, or it has errors old had not.
Load averages (1, 5, 15 min) before: $LOAD_BEFORE; after: $LOAD_AFTER (2 cores shared with other jobs: absolute
figures move with them, the ratio within a row much less). $RUN_S s of runs.

| workload | policy | conns | old req/s | new req/s | new / old | p99 ms old / new | CPU µs/req old / new | peak RSS MiB old / new | errors old / new | |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
$ROWS
Rows worse beyond noise: $([[ -n $BAD ]] && echo "$BAD" || echo none).

_$(date -u +%Y-%m-%dT%H:%MZ), \`BENCH_SECONDS=$SECS PORT_ROUNDS=$ROUNDS bench/port.sh --write\`._
$END_MARK"
printf '%s\n' "$SECTION"
if ((WRITE)) && [[ -n ${PORT_ONLY:-} ]]; then
    log "PORT_ONLY=$PORT_ONLY: some rows only, so $DOC is left as it is"
elif ((WRITE)); then
    replace_section "$DOC" "$BEGIN_MARK" "$END_MARK" "$SECTION"
    log "wrote $DOC"
fi

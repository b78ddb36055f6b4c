#!/usr/bin/env bash
#
# bench/outbound.sh — the outbound-call benchmark of issue 17, bounded to
# about 2 minutes on 2 cores (BENCH_SECONDS=5):
#
#   bench/outbound.sh            # print the sections to stdout
#   bench/outbound.sh --write    # ... and write them into docs/BENCHMARKS.md
#
# 1. aggregate req/s per policy: wrk on /{policy}/aggregate?ids=1,2,3, each
#    request making three HTTP/1.1 calls to an upstream. The upstream is a
#    second weft answering /up/{id} from the hello plugin (one loop, no
#    database), so the figure is the cost of the outbound client, not of an
#    upstream's work; pool, coroutine and reactive run the same plugin.
# 2. fd waits: /hello p99 with and without 1,000 fd waits parked on the
#    loops (the fdwait test fixture, half coroutine, half reactive, waiting
#    on a pipe nobody writes until the end), and their ratio — the "a loop
#    stays responsive while 1,000 fd waits are parked" check.
# Every figure is the median of 3 runs (5 when the spread passes 10 %).
#
# Needs: wrk, curl, a C compiler (packaging/install-deps.sh bench).
# Environment: BENCH_SECONDS (seconds per measured run, default 5),
# WEFT_BUILD (Release build directory, default <repo>/build-bench).
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
bench_setup outbound "$@"

for t in wrk curl cc; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
(($(ulimit -n) >= 4096)) || die "open-files limit $(ulimit -n): 1,000 parked waits need about 3,000 descriptors"

log "building weft (Release) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
    cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
mkdir -p "$TMP/plugins"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"
# The fixture is a test plugin (not built without tests): one file, the public header only.
cc -std=gnu11 -O2 -shared -fPIC -I"$ROOT/server/include" "$ROOT/tests/plugins/fdwait.c" -o "$TMP/plugins/fdwait.so" -lpthread
WEFT=$BUILD/server/weft
wrk_lua
NCPU=$(nproc)
SECTIONS=""
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
add_section() { # NAME TEXT
    local b="<!-- outbound-$1:begin -->" e="<!-- outbound-$1:end -->" text
    text="$2"$'\n\n'"_$(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, \`bench/outbound.sh --write\` (BENCH_SECONDS=$SECS); 1-minute load average when the section finished: $(cut -d' ' -f1 /proc/loadavg) ($NCPU cores; weft, its upstream and wrk share them)._"
    SECTIONS+="$b"$'\n'"$text"$'\n'"$e"$'\n\n'
    if ((WRITE)); then replace_section "$DOC" "$b" "$e" "$b"$'\n'"$text"$'\n'"$e"; fi
}

flag() { awk -v s="$R_SPREAD" -v n="$R_N" 'BEGIN { if (s > 10) printf " ⚠ spread %.0f %%, median of %d", s, n }'; }

# weft_conf FILE PORT THREADS ROUTES
weft_conf() {
    cat >"$1" <<EOF
threads = $3;
listen = [ "127.0.0.1:$2" ];
plugin_dirs = [ "$TMP/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
pools = ({ name = "default"; size = 64; queue = 10000; });
routes = ( $4 );
EOF
}
# start_weft CONF PORT — sets WPID once the port answers.
start_weft() {
    "$WEFT" -c "$1" 2>>"$TMP/weft.log" &
    WPID=$!
    PIDS+=("$WPID")
    wait_http "http://127.0.0.1:$2/"
}
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k { print $2 }'; }
hello='{ path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; }'

# ---- 1. aggregate req/s per policy ----
log "aggregate req/s per policy"
up_port= port=
free_port up_port port
weft_conf "$TMP/up.conf" "$up_port" 1 \
    "{ path = \"/up/{id}\"; plugin = \"hello\"; dispatch = \"reactive\"; options = { greeting = \"{\\\"id\\\": 1}\"; }; }"
start_weft "$TMP/up.conf" "$up_port"
UPID=$WPID
routes="$hello"
for p in pool coroutine reactive; do
    routes+=", { path = \"/$p/aggregate\"; plugin = \"aggregate\"; dispatch = \"$p\"; methods = [\"GET\"];
        options = { upstream = \"http://127.0.0.1:$up_port\"; path = \"/up/\"; max_connections = 32; }; }"
done
weft_conf "$TMP/agg.conf" "$port" "$NCPU" "$routes"
start_weft "$TMP/agg.conf" "$port"
body=$(curl -s "http://127.0.0.1:$port/coroutine/aggregate?ids=1,2,3")
[[ $body == '[{"id": 1},{"id": 1},{"id": 1}]' ]] || die "aggregate answers '$body'"
rows="" chart=""
for p in pool coroutine reactive; do
    agg_once() { run_wrk 50 "$SECS" "http://127.0.0.1:$port/$p/aggregate?ids=1,2,3"; }
    repeat agg_once
    calls=$(awk -v r="$R_MED" 'BEGIN { printf "%d", 3 * r + 0.5 }')
    rows+="| $p | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | $calls | $(field p99) | $(field errors) |"$'\n'
    chart+="$p|$R_MED|$R_MIN|$R_MAX|"$'\n'
done
calls_ok=$(metric "$port" 'weft_outbound_requests_total{outcome="ok"}')
stop_pid "$WPID"
stop_pid "$UPID"
add_section aggregate "### Outbound calls: aggregate req/s per policy

\`wrk -t2 -c50 -d${SECS}s\` on \`/{policy}/aggregate?ids=1,2,3\`: every request makes three HTTP/1.1 calls at once
(the pool worker waits for its batch, the coroutine is suspended, the reactive handler gets three callbacks) to
a second weft (one loop, \`hello\` at \`/up/{id}\`) over keep-alive connections (\`max_connections = 32\` per
loop). The upstream shares the cores, so these are end-to-end figures of both servers.
Requests/s, median of 3 (min–max).

| policy | aggregate req/s | upstream calls/s | p99 ms | errors |
|---|---:|---:|---:|---:|
$rows
Outbound calls answered over all runs: ${calls_ok:-?}."

# ---- 2. /hello p99 with 1,000 fd waits parked ----
log "/hello p99 with and without 1,000 parked fd waits"
fport=
free_port fport
routes="$hello"
for p in coroutine reactive; do
    routes+=", { path = \"/$p/fdwait\"; plugin = \"fdwait\"; dispatch = \"$p\"; methods = [\"GET\"]; }"
done
weft_conf "$TMP/fd.conf" "$fport" "$NCPU" "$routes"
start_weft "$TMP/fd.conf" "$fport"
hello_once() { run_wrk 50 "$SECS" "http://127.0.0.1:$fport/hello" | awk '{ split($3, a, "="); print a[2], "rps=" $1, $2, $4 }'; }
repeat hello_once
without=("$R_MED" "$R_MIN" "$R_MAX" "$(flag)" "$(field rps)" "$(field errors)")
# 1,000 clients, each with a request whose handler waits on its route's gate pipe.
/usr/bin/python3 -c '
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    policy = "coroutine" if i % 2 == 0 else "reactive"
    s.sendall(("GET /%s/fdwait?gate=1&timeout=600000 HTTP/1.1\r\nHost: b\r\n\r\n" % policy).encode())
    socks.append(s)
print("sent", flush=True)
time.sleep(3600)
' "$fport" 1000 >"$TMP/holder.out" &
HOLDER=$!
PIDS+=("$HOLDER")
for ((i = 0; i < 600; i++)); do
    parked=$(metric "$fport" weft_fd_waits)
    [[ ${parked:-0} -ge 1000 ]] && break
    sleep 0.1
done
[[ ${parked:-0} -ge 1000 ]] || die "only ${parked:-0} fd waits parked"
repeat hello_once
with=("$R_MED" "$R_MIN" "$R_MAX" "$(flag)" "$(field rps)" "$(field errors)")
still=$(metric "$fport" weft_fd_waits)
for p in coroutine reactive; do curl -s -o /dev/null "http://127.0.0.1:$fport/$p/fdwait?release=1"; done
for ((i = 0; i < 300; i++)); do
    parked=$(metric "$fport" weft_fd_waits)
    [[ ${parked:-1} -eq 0 ]] && break
    sleep 0.1
done
stop_pid "$HOLDER"
stop_pid "$WPID"
ratio=$(awk -v a="${with[0]}" -v b="${without[0]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
add_section fdwait "### A loop stays responsive with 1,000 fd waits parked

\`wrk -t2 -c50 -d${SECS}s\` on \`/hello\`, first alone, then while 1,000 requests (500 coroutine, 500 reactive;
the \`fdwait\` test fixture) each wait on a pipe nobody writes — \`weft_fd_waits\` read ${still:-?} during the
runs, and fell to ${parked:-?} once the pipes were written. p99 in ms, median of 3 (min–max).

| /hello | p99 ms | req/s | errors |
|---|---:|---:|---:|
| alone | $(fmt1 "${without[0]}" "${without[1]}" "${without[2]}")${without[3]} | ${without[4]} | ${without[5]} |
| with 1,000 parked fd waits | $(fmt1 "${with[0]}" "${with[1]}" "${with[2]}")${with[3]} | ${with[4]} | ${with[5]} |
| **ratio** | **$ratio** | | |

A parked wait costs the loop nothing until its descriptor is ready: it is one more descriptor in the
loop's epoll set (a \`dup\` of the plugin's), a timer, and a suspended coroutine or a callback record."

printf '%s' "$SECTIONS"
if ((WRITE)); then log "wrote $DOC"; fi

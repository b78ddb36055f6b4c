#!/usr/bin/env bash
# bench/static.sh — static files: weft's static route against h2o's own
# server built from the same vendored tree (cmake target h2o-server: the same
# libh2o commit, the same file handler) and nginx, on the same machine in the
# same run. A 5-byte file and a 1 MB file, HTTP/1.1 (wrk -c100) and h2c
# (h2load -c10 -m10), in two layouts: pinned (each server one thread on CPU 0,
# the load generator on CPU 1: the target's) and shared ($(nproc) threads /
# workers each, nothing pinned). Each server does what weft's static route
# does by default: it serves precompressed siblings when asked (h2o's
# file.send-compressed, nginx's gzip_static); weft and h2o then both send
# Vary: Accept-Encoding.
#
#   bench/static.sh            # print the section to stdout
#   bench/static.sh --write    # ... and write it into docs/BENCHMARKS.md
#
# Interleaved rounds (one run of each server per round, the order rotated),
# 3 rounds, 2 more while a spread exceeds 10 % (up to 7: the 5-byte h2c rows
# swing by a fifth from one run to the next on a shared machine); medians with min–max, and the
# ratio weft / h2o per row as the median of the rounds' ratios (target
# ≥ 0.95×). Bounded: 2 layouts × 2 files ×
# 2 protocols × 3 servers × 3–7 runs of BENCH_SECONDS (default 5) ≈ 6–14 min.
#
# Needs: packaging/install-deps.sh bench (wrk, h2load, nginx-light, curl).
# Environment: BENCH_SECONDS, WEFT_BUILD (Release build directory, default
# <repo>/build-bench).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${BENCH_SECONDS:-5}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup static "$@"
chmod 755 "$TMP" # h2o and nginx workers run as nobody and read the files
for t in wrk h2load curl nginx; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
ulimit -n 65536 2>/dev/null || true
NCPU=$(nproc)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

log "building weft (Release) and h2o's server of the vendored tree in $BUILD"
if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 ||
    ! cmake --build "$BUILD" -j"$NCPU" --target weft h2o-server >>"$TMP/cmake.log" 2>&1; then
    cat "$TMP/cmake.log" >&2
    die "build failed (h2o-server needs libyaml-dev)"
fi
cp "$BUILD/server/weft" "$TMP/weft"
cp "$BUILD/bench/h2o" "$TMP/h2o" # private copies: a rebuild must not swap them
H2O_VERSION="$("$TMP/h2o" --version 2>/dev/null | awk 'NR == 1 { print $3 }') @ $(awk '$1 == "commit" { print substr($2, 1, 7) }' "$ROOT/third_party/h2o/UPSTREAM")"
mkdir -p "$TMP/www"
printf 'hello' >"$TMP/www/5b.txt"
head -c 1048576 /dev/urandom >"$TMP/www/1m.bin"
chmod -R a+rX "$TMP/www"
wrk_lua

# start_servers THREADS [CPUS] — weft, h2o and nginx with THREADS threads /
# workers each, on the CPUs of CPUS (a taskset list) when given; sets the
# ports and pids the measurements read.
wp='' hp='' np='' nc='' pid_weft='' pid_h2o='' pid_nginx=''
start_servers() {
    local n=$1 pin=() p
    [[ -n ${2:-} ]] && pin=(taskset -c "$2")
    free_port wp hp np nc
    cat >"$TMP/weft.conf" <<EOF
threads = $n;
listen = [ "127.0.0.1:$wp" ];
admin = false;
log = { level = "warn"; request_id_header = "never"; };
routes = ( { path = "/"; static = { dir = "$TMP/www"; }; } );
EOF
    cat >"$TMP/h2o.yaml" <<EOF
num-threads: $n
user: nobody
error-log: $TMP/h2o.err
listen:
  host: 127.0.0.1
  port: $hp
hosts:
  default:
    paths:
      /:
        file.dir: $TMP/www
        file.send-compressed: ON
EOF
    cat >"$TMP/nginx.conf" <<EOF
worker_processes $n;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.err;
events { worker_connections 20000; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000000;
  http2_max_requests 100000000;
  client_body_temp_path $TMP/nginx-body;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$np;
    listen 127.0.0.1:$nc http2;
    root $TMP/www;
    gzip_static on;
  }
}
EOF
    "$TMP/weft" -t -c "$TMP/weft.conf" >"$TMP/check.log" 2>&1 || { cat "$TMP/check.log" >&2; die "weft rejects its config"; }
    "$TMP/h2o" -t -c "$TMP/h2o.yaml" >"$TMP/h2o.log" 2>&1 || { cat "$TMP/h2o.log" >&2; die "h2o rejects its config"; }
    "${pin[@]}" "$TMP/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
    pid_weft=$!
    PIDS+=($!)
    "${pin[@]}" "$TMP/h2o" -c "$TMP/h2o.yaml" >>"$TMP/h2o.log" 2>&1 &
    pid_h2o=$!
    PIDS+=($!)
    "${pin[@]}" nginx -c "$TMP/nginx.conf" -e "$TMP/nginx.err" >/dev/null 2>&1 &
    pid_nginx=$!
    PIDS+=($!)
    for p in "$wp" "$hp" "$np"; do
        wait_http "http://127.0.0.1:$p/5b.txt"
        [[ $(curl -s "http://127.0.0.1:$p/5b.txt") == hello ]] || die "port $p does not serve 5b.txt"
        [[ $(curl -s "http://127.0.0.1:$p/1m.bin" | cmp - "$TMP/www/1m.bin" && echo same) == same ]] || die "port $p: 1m.bin differs"
    done
    # The same answer: weft and h2o say the file has precompressed variants
    # (nginx's gzip_static says so only when a .gz exists).
    for p in "$wp" "$hp"; do
        curl -sI "http://127.0.0.1:$p/5b.txt" | grep -qi '^vary: *accept-encoding' || die "port $p: no Vary: Accept-Encoding"
    done
}
stop_servers() { for p in "$pid_weft" "$pid_h2o" "$pid_nginx"; do stop_pid "$p"; done; }

# shellcheck disable=SC2034 # read by interleaved (bench/r2lib.sh)
IV_MAX_ROUNDS=7
h1() { run_wrk 100 "$SECS" "$1"; }
# ratio_cell MEDIAN MIN MAX — "**1.02×** (0.97–1.08)"
ratio_cell() { awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { printf "**%.2f×** (%.2f–%.2f)", m, a, b }'; }
h2() { run_h2load 10 10 "$SECS" "$1"; }
# measure LAYOUT — the four rows (two files × two protocols) of one layout,
# appended to rows and ratios.
measure() {
    local layout=$1 file proto name fn p_w p_h p_n s srv wh wn eh ok wh_lo wh_hi eh_lo eh_hi
    for file in 5b.txt 1m.bin; do
        for proto in "HTTP/1.1 (wrk -c100)|h1|$wp|$hp|$np" "h2c (h2load -c10 -m10)|h2|$wp|$hp|$nc"; do
            IFS='|' read -r name fn p_w p_h p_n <<<"$proto"
            local srvs=("weft:$p_w:$pid_weft" "h2o:$p_h:$pid_h2o" "nginx:$p_n:$pid_nginx")
            declare -A med=() cpu=()
            interleaved "$layout $file $name" "$fn" "http://127.0.0.1:%s/$file" "${srvs[@]}"
            for srv in "${srvs[@]}"; do
                s=${srv%%:*}
                # shellcheck disable=SC2086
                read -r R_MED R_MIN R_MAX R_SPREAD <<<"$(stats ${IV_RPS[$s]})"
                # shellcheck disable=SC2034 # R_ALL is read by field
                R_ALL=${IV_ALL[$s]}
                med[$s]=$R_MED cpu[$s]=$(field cpu_us)
                rows+="| $layout | $file | $name | $s | $(fmt "$R_MED" "$R_MIN" "$R_MAX") | ${cpu[$s]} | $(field errors) |"$'\n'
            done
            # Each ratio is the median of the rounds' own ratios: the runs of a
            # round are neighbours in time, so the machine's drift cancels.
            read -r wh wh_lo wh_hi <<<"$(paired_ratio "${IV_RPS[weft]}" "${IV_RPS[h2o]}")"
            read -r wn _ <<<"$(paired_ratio "${IV_RPS[weft]}" "${IV_RPS[nginx]}")"
            # Efficiency: requests per CPU second, weft's over h2o's (= h2o's µs per request over weft's).
            read -r eh eh_lo eh_hi <<<"$(paired_ratio "$(run_field cpu_us "${IV_ALL[h2o]}")" "$(run_field cpu_us "${IV_ALL[weft]}")")"
            ok=$(awk -v r="$wh" -v e="$eh" 'BEGIN { print (r >= 0.95) ? "met" : (e >= 0.95 ? "req/s missed, CPU met" : "**missed**") }')
            ratios+="| $layout | $file | $name | $(ratio_cell "$wh" "$wh_lo" "$wh_hi") | $(ratio_cell "$eh" "$eh_lo" "$eh_hi") | $(printf '%.2f' "$wn")× | $ok |"$'\n'
            log "$layout $file $name: weft ${med[weft]}, h2o ${med[h2o]}, nginx ${med[nginx]} req/s; µs/request ${cpu[weft]} ${cpu[h2o]} ${cpu[nginx]}: weft/h2o $wh (CPU $eh)"
            unset med cpu
        done
    done
}

rows="" ratios=""
# Pinned: each server has one thread on CPU 0 and the load generator (one
# thread) has CPU 1 to itself, so a run measures the server. Shared: every
# server has $NCPU threads and the load generator two, all placed by the
# scheduler: on 2 cores, 4 busy threads, and how a server's accept spreads
# the 10 h2load connections over its threads moves the 1 MB h2c result more
# than the server's own cost does (docs/BENCHMARKS.md, under the table).
if ((NCPU >= 2)); then
    start_servers 1 0
    BENCH_CLIENT_CPUS=1 BENCH_CLIENT_THREADS=1 measure pinned
    stop_servers
fi
start_servers "$NCPU"
measure shared
stop_servers
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

section="<!-- BEGIN static.sh -->
### Static files: weft's static route, h2o $H2O_VERSION (the vendored tree), nginx $(nginx -v 2>&1 | sed 's|.*/||')

\`bench/static.sh\`, $(date -u +%Y-%m-%d), $NCPU CPUs shared with other jobs (load average $LOAD0 before, $LOAD1 after).
weft serves a static route on \`/\` (h2o's file handler behind weft's router and its path, symlink and Range
checks); h2o serves the same directory with \`file.dir\` (its server built from third_party/h2o, cmake target
\`h2o-server\`, the same libh2o commit); nginx with \`root\` and \`sendfile on\`. Two layouts: **pinned**, each
server one thread on CPU 0 and the load generator one thread on CPU 1 (the target's layout: a run measures the
server, not where the scheduler put it); **shared**, $NCPU threads / workers each and a two-thread load generator,
nothing pinned. Cleartext loopback, ${SECS} s per run, the servers interleaved round by round; 3 rounds, 2 more
while a server's spread exceeded 10 % (at most 7). A ratio is the median of the rounds' own ratios (each round's runs are neighbours in
time, so a drift of the machine's load cancels out of it), with their min–max; the second table gives each
server's medians with min–max, in requests/s.

| layout | file | protocol | weft / h2o req/s (target ≥ 0.95×), median (min–max) of the rounds | weft / h2o requests per CPU second | weft / nginx req/s | target |
|---|---|---|---|---|---|---|
${ratios}
| layout | file | protocol | server | req/s median (min–max) | server CPU µs / request | errors |
|---|---|---|---|---|---|---|
${rows}
Ratios are of the same run. req/s moves with the share of the 2 cores the machine's other jobs leave each
server during its run; server CPU time per request (the process and its children, from /proc) does not, so
on a loaded machine the CPU column is the steadier comparison.
<!-- END static.sh -->"
printf '%s\n' "$section"
if ((WRITE)); then
    replace_section "$DOC" "<!-- BEGIN static.sh -->" "<!-- END static.sh -->" "$section"
    log "written into $DOC"
fi

#!/usr/bin/env bash
# shellcheck disable=SC2154 # free_port (r2lib.sh) sets the port variables by name
#
# bench/round2.sh — every table and chart of docs/BENCHMARKS.md in one
# command (issue 19), bounded to ~15 minutes on 2 cores:
#
#   bench/round2.sh            # print the sections to stdout
#   bench/round2.sh --write    # ... and write them (and docs/charts/*.svg) into the docs
#
# Runs, in order: bench/policies.sh (the seed table), idle RSS, start time,
# c10k, weft against h2o and nginx (HTTP/1.1, h2 over TLS, h2c), the
# database path against pgbench, p99 under reloads. Every figure of the new
# sections is the median of 3 runs with min–max; a figure whose spread
# exceeds 10 % is measured twice more and reported as the median of 5,
# flagged in the table. The ten-minute soak stays separate (bench/soak.sh).
#
# Needs: packaging/install-deps.sh bench (wrk, h2load, nginx-light, …). h2o is
# not a package: its own server is built from the vendored tree
# (third_party/h2o, the target h2o-server, into <build>/bench/h2o), so the
# ceiling is the same libh2o commit weft links, with the same compiler.
# Kernel settings for 10,000 connections: see "c10k" in docs/BENCHMARKS.md;
# the script raises its own open-files limit and says what is missing.
#
# Environment: BENCH_SECONDS (seconds per measured run, default 5),
# WEFT_BUILD (Release build directory, default <repo>/build-bench),
# ROUND2_ONLY (space-separated subset: policies rss start c10k servers db reload).
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${BENCH_SECONDS:-5}
ONLY=${ROUND2_ONLY:-policies rss start c10k servers db reload}
DOC=$ROOT/docs/BENCHMARKS.md
CHARTS=$ROOT/docs/charts
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup round2 "$@"
chmod 755 "$TMP" # h2o and nginx workers run as nobody and read the certificate and file
want() { [[ " $ONLY " == *" $1 "* ]]; }

for t in wrk h2load curl openssl; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
(($(ulimit -n) >= 12000)) || die "open-files limit $(ulimit -n): 10,000 connections need 12,000 per process (wrk and weft each hold one end)"

log "building weft (Release) in $BUILD$(want servers && echo ", and h2o's server of the vendored tree")"
targets=(all)
want servers && targets+=(h2o-server) # EXCLUDE_FROM_ALL: only when asked for
if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 ||
    ! cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >>"$TMP/cmake.log" 2>&1; then
    cat "$TMP/cmake.log" >&2
    if grep -q "h2o-server" "$TMP/cmake.log"; then log "no target h2o-server: it needs libyaml (libyaml-dev)"; fi
    die "build failed"
fi
((WRITE)) || CHARTS=$TMP/charts # charts go into the docs only with --write
mkdir -p "$TMP/plugins" "$TMP/www" "$CHARTS"
cp "$BUILD/server/weft" "$TMP/weft"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"
WEFT=$TMP/weft
printf 'hello' >"$TMP/www/hello" # weft's /hello body, for the static servers
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
chmod 644 "$TMP/key.pem" "$TMP/cert.pem"
wrk_lua
NCPU=$(nproc)
SECTIONS=""
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
add_section() { # NAME TEXT — stamped with date, commit and the machine's load (other jobs show there)
    local b="<!-- round2-$1:begin -->" e="<!-- round2-$1:end -->" text
    text="$2"$'\n\n'"_$(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, \`bench/round2.sh --write\` (BENCH_SECONDS=$SECS); 1-minute load average when the section finished: $(cut -d' ' -f1 /proc/loadavg) (2 cores; weft and its load generator account for about 2)._"
    SECTIONS+="$b"$'\n'"$text"$'\n'"$e"$'\n\n'
    if ((WRITE)); then replace_section "$DOC" "$b" "$e" "$b"$'\n'"$text"$'\n'"$e"; fi
}
met() { awk -v v="$1" -v t="$2" -v d="${3:-ge}" 'BEGIN { ok = (d == "ge") ? v >= t : v <= t; print ok ? "**met**" : "**missed**" }'; }
flag() { awk -v s="$R_SPREAD" -v n="$R_N" 'BEGIN { if (s > 10) printf " ⚠ spread %.0f %%, median of %d", s, n }'; }

# weft_conf FILE PORT [extra config] — weft on one loopback port, plugins of this run.
weft_conf() {
    cat >"$1" <<EOF
threads = $NCPU;
listen = [ "127.0.0.1:$2" ];
plugin_dirs = [ "$TMP/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
pools = ({ name = "default"; size = 200; queue = 10000; });
$3
EOF
}
# start_weft CONF PORT [env...] — sets WPID once /hello (or the port) answers.
start_weft() {
    local conf=$1 port=$2
    shift 2
    env "$@" "$WEFT" -c "$conf" 2>>"$TMP/weft.log" &
    WPID=$!
    PIDS+=("$WPID")
    wait_http "http://127.0.0.1:$port/"
}
routes_hello='{ path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; },'

# ---- 1. the seed table (bench/policies.sh, unchanged) ----
if want policies; then
    log "bench/policies.sh (the seed table)"
    write_arg=()
    ((WRITE)) && write_arg=(--write)
    BENCH_SECONDS=$((SECS * 2)) WEFT_BUILD=$BUILD "$ROOT/bench/policies.sh" "${write_arg[@]}" >"$TMP/policies.md"
    # Charts from the table it wrote: % of limit, and p50/p99.
    awk -F'|' '/^\| (delay|locked|cpu) \|/ { for (i = 2; i <= 9; i++) gsub(/ /, "", $i); sub(/%/, "", $7)
        printf "%s %s %s|%s|%s|%s|100\n", $2, $3, $4, $7, $7, $7 }' "$TMP/policies.md" |
        svg_bars "$CHARTS/policies.svg" "Dispatch policies: % of each workload's limit" "% of limit (single run)"
    awk -F'|' '/^\| (delay|locked|cpu|hello) \|/ { for (i = 2; i <= 9; i++) gsub(/ /, "", $i)
        printf "%s %s %s p50|%s|%s|%s|\n%s %s %s p99|%s|%s|%s|\n", $2, $3, $4, $8, $8, $8, $2, $3, $4, $9, $9, $9 }' "$TMP/policies.md" |
        svg_bars "$CHARTS/latency.svg" "Dispatch policies: latency percentiles" "ms (single run)"
    add_section charts "### Charts of the table above

![policies](charts/policies.svg)

![latency](charts/latency.svg)"
fi

# ---- 2. RSS of an idle default server without database routes ----
if want rss; then
    log "idle RSS"
    rss_once() { WEFT_BUILD=$BUILD "$ROOT/bench/rss_idle.sh" "$BUILD/server/weft" | sed 's/rss_kib=\([0-9]*\)/\1/'; }
    repeat rss_once
    rss_med=$(awk -v k="$R_MED" 'BEGIN { printf "%.1f", k / 1024 }')
    libpq=$(field libpq_mapped)
    add_section rss "### Idle RSS without database routes

\`bench/rss_idle.sh\`: etc/weft.conf without its persons routes, no \`PG*\` variable, 1 s idle after one request.

| RSS MiB (median, min–max of $R_N) | libpq mapped | target | |
|---|---|---|---|
| $(awk -v a="$R_MED" -v b="$R_MIN" -v c="$R_MAX" 'BEGIN { printf "%.1f (%.1f–%.1f)", a / 1024, b / 1024, c / 1024 }') | $([[ $libpq == 0 ]] && echo no || echo yes) | ≤ 8 MiB | $(met "$rss_med" 8 le) |"
fi

# ---- 3. start: exec to the first 200 on /hello, default config ----
if want start; then
    log "start time"
    free_port port admin
    sed -e "s|^listen = .*|listen = [ \"127.0.0.1:$port\" ];|" -e "s|^plugin_dirs = .*|plugin_dirs = [ \"$TMP/plugins\" ];|" \
        -e "s|^admin = .*|admin = { listen = \"127.0.0.1:$admin\"; };|" -e '/^pid_file/d' "$ROOT/etc/weft.conf" >"$TMP/default.conf"
    start_once() {
        /usr/bin/python3 - "$WEFT" "$TMP/default.conf" "$port" <<'PY'
import socket, subprocess, sys, time, os
weft, conf, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
t0 = time.monotonic()
log = open(conf + ".log", "w")
p = subprocess.Popen([weft, "-c", conf], stderr=log, env=env)
while True:
    if p.poll() is not None:
        sys.exit("weft exited with %d before answering: %s" % (p.returncode, open(conf + ".log").read()))
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            break
    except OSError:
        time.sleep(0.0005)
t1 = time.monotonic()
p.terminate(); p.wait()
print("%.1f" % ((t1 - t0) * 1000))
PY
    }
    vals=()
    for _ in $(seq 10); do vals+=("$(start_once)"); done
    read -r med lo hi _ <<<"$(stats "${vals[@]}")"
    add_section start "### Start: exec to the first 200 on /hello

etc/weft.conf (loopback port, this build's plugins, no \`PG*\`: libpq not loaded), 10 starts.

| median ms | min–max ms | target | |
|---|---|---|---|
| $med | $lo–$hi | < 30 ms | $(met "$med" 30 le) |"
fi

# ---- 4. c10k ----
if want c10k; then
    log "c10k"
    # Twice the usual length: 10,000 connects take a second or more, which a
    # short run would count against the rate.
    C10K_SECS=$((SECS * 2))
    free_port port
    weft_conf "$TMP/c10k.conf" "$port" "routes = ( $routes_hello
  { path = \"/coroutine/delay\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 200; }; },
  { path = \"/reactive/delay\"; plugin = \"delay\"; dispatch = \"reactive\"; options = { ms = 200; }; } );"
    c10k_once() { # PATH — fresh weft per run: its own peak RSS
        start_weft "$TMP/c10k.conf" "$port"
        local idle r
        idle=$(rss_kib "$WPID")
        r=$(run_wrk 10000 "$C10K_SECS" "http://127.0.0.1:$port$1")
        echo "$r rss_mib=$(awk -v k="$(hwm_kib "$WPID")" 'BEGIN { printf "%.1f", k / 1024 }') per_conn_kib=$(awk -v a="$(hwm_kib "$WPID")" -v b="$idle" 'BEGIN { printf "%.1f", (a - b) / 10000 }')"
        stop_pid "$WPID"
    }
    rows="" chart=""
    for path in /coroutine/delay /reactive/delay /hello; do
        repeat c10k_once "$path"
        lim=$([[ $path == /hello ]] && echo "" || echo 50000)
        pct=$([[ -n $lim ]] && awk -v v="$R_MED" 'BEGIN { printf "%.1f %%", v / 500 }' || echo –)
        verdict=$([[ -n $lim ]] && echo "$(met "$(awk -v v="$R_MED" 'BEGIN { print v / 500 }')" 95)$(awk -v e="$(field errors)" -v r="$(field rss_mib)" 'BEGIN { if (e > 0 || r > 160) printf " (errors %d, RSS %.1f)", e, r }')" || echo –)
        rows+="| $path | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | ${lim:-–} | $pct | $(field p50) | $(field p99) | $(field errors) | $(field rss_mib) | $(field per_conn_kib) | $verdict |"$'\n'
        [[ -n $lim ]] && chart+="$path|$R_MED|$R_MIN|$R_MAX|$lim"$'\n'
    done
    printf '%s' "$chart" | svg_bars "$CHARTS/c10k.svg" "10,000 connections, 200 ms delay" "req/s"
    add_section c10k "### c10k: 10,000 concurrent connections

\`wrk -t2 -c10000 -d${C10K_SECS}s\`, fresh weft per run ($NCPU loops, default \`limits.max_connections\` = 10,000).
Limit for delay: 10,000 / 200 ms = 50,000 req/s. Targets: ≥ 95 % of it, 0 errors, peak RSS ≤ 160 MiB.
RSS per connection = (peak RSS − RSS before the run) / 10,000. Medians of 3 (min–max for req/s).

| path | req/s | limit | of limit | p50 ms | p99 ms | errors | peak RSS MiB | KiB per connection | target |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
$rows
![c10k](charts/c10k.svg)"
fi

# ---- 5. against the library's own server (h2o of the vendored tree) and nginx ----
if want servers; then
    log "weft vs h2o (vendored, built from third_party/h2o) vs nginx"
    command -v nginx >/dev/null || die "nginx missing: packaging/install-deps.sh bench"
    [[ -x $BUILD/bench/h2o ]] || die "no $BUILD/bench/h2o after the build (cmake target h2o-server)"
    H2O=$TMP/h2o
    cp "$BUILD/bench/h2o" "$H2O" # a private copy, like weft's: a rebuild must not swap it
    H2O_VERSION="$("$H2O" --version 2>/dev/null | awk 'NR == 1 { print $3 }') @ $(awk '$1 == "commit" { print substr($2, 1, 7) }' "$ROOT/third_party/h2o/UPSTREAM")"
    free_port wp wt hp ht np nc nt qp qt
    weft_conf "$TMP/srv.conf" "$wp" "routes = ( $routes_hello
  { path = \"/coroutine/delay\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 200; }; } );"
    sed -i "s|^listen = .*|listen = ( \"127.0.0.1:$wp\", { address = \"127.0.0.1:$wt\"; tls = { certificate = \"$TMP/cert.pem\"; key = \"$TMP/key.pem\"; }; } );|" "$TMP/srv.conf"
    # The same server without the X-Request-Id response header (log.request_id_header = "never").
    sed -e "s|127.0.0.1:$wp|127.0.0.1:$qp|; s|127.0.0.1:$wt|127.0.0.1:$qt|" \
        -e 's|^log = .*|log = { level = "warn"; request_id_header = "never"; };|' "$TMP/srv.conf" >"$TMP/srv-noid.conf"
    # h2o's own server: as many threads as weft's loops, h2 by ALPN on the
    # TLS port and h2c by prior knowledge on the plain one (both its defaults).
    cat >"$TMP/h2o.yaml" <<EOF
num-threads: $NCPU
user: nobody
error-log: $TMP/h2o.err
listen:
  host: 127.0.0.1
  port: $hp
listen:
  host: 127.0.0.1
  port: $ht
  ssl:
    certificate-file: $TMP/cert.pem
    key-file: $TMP/key.pem
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /:
        file.dir: $TMP/www
EOF
    "$H2O" -t -c "$TMP/h2o.yaml" >"$TMP/h2o.log" 2>&1 || { cat "$TMP/h2o.log" >&2; die "h2o rejects its config"; }
    cat >"$TMP/nginx.conf" <<EOF
worker_processes $NCPU;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.err;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;   # the default 1000 closes h2 connections under h2load
  http2_max_requests 100000000;
  client_body_temp_path $TMP/nginx-body;
  default_type text/plain;
  server {
    listen 127.0.0.1:$np;
    listen 127.0.0.1:$nc http2;
    listen 127.0.0.1:$nt ssl http2;
    ssl_certificate $TMP/cert.pem;
    ssl_certificate_key $TMP/key.pem;
    root $TMP/www;
  }
}
EOF
    start_weft "$TMP/srv.conf" "$wp"
    pid_weft=$WPID
    start_weft "$TMP/srv-noid.conf" "$qp"
    pid_noid=$WPID
    "$H2O" -c "$TMP/h2o.yaml" >>"$TMP/h2o.log" 2>&1 &
    pid_h2o=$!
    PIDS+=("$pid_h2o")
    nginx -c "$TMP/nginx.conf" -e "$TMP/nginx.err" >/dev/null 2>&1 &
    pid_nginx=$!
    PIDS+=("$pid_nginx")
    wait_http "http://127.0.0.1:$hp/hello"
    wait_http "http://127.0.0.1:$np/hello"
    [[ $(curl -s "http://127.0.0.1:$hp/hello") == hello ]] || die "h2o does not serve /hello (log: $(cat "$TMP/h2o.err" "$TMP/h2o.log" 2>/dev/null))"
    h1() { run_wrk 100 "$SECS" "$1"; }
    h2() { run_h2load 10 10 "$SECS" "$1"; }
    rows="" chart="" cpu_rows=""
    for proto in "HTTP/1.1 (wrk -c100)|h1|http://127.0.0.1:%s/hello|$wp|$hp|$np|$qp" \
        "h2 over TLS (h2load -c10 -m10)|h2|https://127.0.0.1:%s/hello|$wt|$ht|$nt|$qt" \
        "h2c (h2load -c10 -m10)|h2|http://127.0.0.1:%s/hello|$wp|$hp|$nc|$qp"; do
        IFS='|' read -r name fn url p_w p_h p_n p_q <<<"$proto"
        srvs=("weft:$p_w:$pid_weft" "weft-no-id:$p_q:$pid_noid" "h2o:$p_h:$pid_h2o" "nginx:$p_n:$pid_nginx")
        declare -A med=() cpu=()
        IV_MAX_ROUNDS=7 interleaved "$name" "$fn" "$url" "${srvs[@]}"
        for srv in "${srvs[@]}"; do
            s=${srv%%:*}
            # shellcheck disable=SC2086
            read -r R_MED R_MIN R_MAX R_SPREAD <<<"$(stats ${IV_RPS[$s]})"
            # shellcheck disable=SC2206
            v=(${IV_RPS[$s]})
            # shellcheck disable=SC2034 # R_N and R_ALL are read by flag and field
            R_N=${#v[@]} R_ALL=${IV_ALL[$s]}
            med[$s]=$R_MED cpu[$s]=$(field cpu_us)
            rows+="| $name | $s | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | ${cpu[$s]} | $(field errors) |"$'\n'
            chart+="${name%% (*} $s|$R_MED|$R_MIN|$R_MAX|"$'\n'
        done
        # The median of the rounds' own ratios: a round's runs are neighbours
        # in time, so the machine's drift cancels out of each.
        for s in weft weft-no-id; do
            read -r ratio r_lo r_hi <<<"$(paired_ratio "${IV_RPS[$s]}" "${IV_RPS[h2o]}")"
            rows+="| $name | **$s / h2o: $(printf '%.2f' "$ratio")×** ($(printf '%.2f–%.2f' "$r_lo" "$r_hi") in the rounds) | target ≥ 0.95× | | $(met "$ratio" 0.95) |"$'\n'
        done
        cpu_rows+="| $name | ${cpu[weft]} | ${cpu[weft-no-id]} | ${cpu[h2o]} | $(awk -v a="${cpu[h2o]}" -v b="${cpu[weft]}" -v c="${cpu[weft-no-id]}" \
            'BEGIN { printf "%.2f× | %.2f×", (b > 0) ? a / b : 0, (c > 0) ? a / c : 0 }') |"$'\n'
        unset med cpu
    done
    repeat run_h2load 100 10 "$SECS" "http://127.0.0.1:$wp/coroutine/delay"
    delay_row="| /coroutine/delay, h2c, 100 connections × 10 streams | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | 5000 | $(field errors) |"
    for p in "${PIDS[@]}"; do stop_pid "$p"; done
    PIDS=()
    printf '%s' "$chart" | svg_bars "$CHARTS/servers.svg" "GET /hello: weft, h2o $H2O_VERSION (static file), nginx" "req/s"
    add_section servers "### Against the library's own server: weft, h2o $H2O_VERSION (the vendored tree), nginx $(nginx -v 2>&1 | sed 's|.*/||')

h2o is its own server built from weft's vendored copy (third_party/h2o, cmake target \`h2o-server\`, with weft's patches),
so both sides run the same libh2o commit built by the same compiler. Same machine, same run, $NCPU threads / workers
each, the same self-signed P-256 certificate. weft answers \`/hello\` from the hello plugin (reactive); h2o and nginx
serve the same 5 bytes from a static file. ${SECS} s per run; the servers take turns, one run each per round with the
order rotated, 3 rounds (2 more while a spread exceeds 10 %, at most 7), median (min–max); a ratio is the median of
the rounds' own ratios (a round's runs are neighbours in time, so the machine's drift cancels). weft-no-id is the same weft with
\`log.request_id_header = \"never\"\` (docs/CONFIG.md): no \`X-Request-Id\` on the answers (which weft sends
never-indexed in HPACK, third_party/patches/h2o/0001). CPU µs/req = the server's own CPU time (all threads, nginx's
workers) over a run divided by its requests, median of the runs: it does not depend on the share of the two cores the
server got, which other jobs on the machine change from run to run.

| protocol | server | req/s | CPU µs/req | errors |
|---|---|---:|---:|---:|
$rows
| protocol | weft µs/req | weft-no-id µs/req | h2o µs/req | h2o / weft (CPU per request) | h2o / weft-no-id |
|---|---:|---:|---:|---:|---:|
$cpu_rows
| weft only | req/s | limit | errors |
|---|---:|---:|---:|
$delay_row

![servers](charts/servers.svg)"
fi

# ---- 6. the database path against pgbench ----
if want db || want reload; then
    "$ROOT/packaging/pgdev.sh" start "$TMP/pg" >/dev/null
    eval "$("$ROOT/packaging/pgdev.sh" env "$TMP/pg")"
    command -v pgbench >/dev/null || PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin | tail -1)
fi
persons_routes='{ path = "/pool/persons/{id}"; plugin = "persons"; dispatch = "pool"; methods = ["GET"]; },
  { path = "/coroutine/persons/{id}"; plugin = "persons"; dispatch = "coroutine"; methods = ["GET"]; },
  { path = "/reactive/persons/{id}"; plugin = "persons"; dispatch = "reactive"; methods = ["GET"]; }'
if want db; then
    log "database path"
    createdb pgbench 2>/dev/null || true
    pgbench -i -q -s 1 pgbench >/dev/null 2>&1
    pgb() { pgbench -S -M prepared -c 32 -j 2 -T "$SECS" pgbench 2>/dev/null | awk '/^tps/ { printf "%.0f\n", $3; exit }'; }
    repeat pgb
    pg_med=$R_MED
    rows="| pgbench -S -M prepared -c 32 | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | 1.00 | | – | – | – |"$'\n'
    chart="pgbench|$R_MED|$R_MIN|$R_MAX|"$'\n'
    free_port port
    weft_conf "$TMP/db.conf" "$port" "database = { conninfo = \"dbname=weft\"; };
routes = ( $persons_routes );"
    start_weft "$TMP/db.conf" "$port"
    for policy in pool coroutine reactive; do
        repeat run_wrk 100 "$SECS" "http://127.0.0.1:$port/$policy/persons/" "$TMP/random.lua"
        ratio=$(awk -v a="$R_MED" -v b="$pg_med" 'BEGIN { printf "%.2f", a / b }')
        t=$([[ $policy == pool ]] && echo 0.5 || echo 0.9)
        rows+="| $policy (wrk -c100, HTTP/1.1) | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | $ratio | ≥ $t× — $(met "$ratio" "$t") | $(field p50) | $(field p99) | $(field errors) |"$'\n'
        chart+="$policy|$R_MED|$R_MIN|$R_MAX|"$'\n'
    done
    for i in $(seq 1000); do echo "http://127.0.0.1:$port/coroutine/persons/$i"; done >"$TMP/uris"
    repeat run_h2load 10 10 "$SECS" -i "$TMP/uris"
    rows+="| coroutine over h2c (h2load -c10 -m10) | $(fmt "$R_MED" "$R_MIN" "$R_MAX")$(flag) | $(awk -v a="$R_MED" -v b="$pg_med" 'BEGIN { printf "%.2f", a / b }') | | – | – | $(field errors) |"$'\n'
    stop_pid "$WPID"
    printf '%s' "$chart" | svg_bars "$CHARTS/persons.svg" "GET /{policy}/persons/{id} against pgbench" "req/s (tps for pgbench)"
    add_section db "### Database path: persons by id against pgbench

The private PostgreSQL 15 of \`packaging/pgdev.sh\` (unix socket), random ids 1..1000, weft with the default
\`database\` settings (\`pool_connections = 0\`: pool workers share the loops' pipelined connections; docs/DATABASE.md).
pgbench runs the same kind of query (\`-S\`: one primary-key SELECT) on the same cluster. ${SECS} s per run, median of 3.

| client | req/s | of pgbench | target | p50 ms | p99 ms | errors |
|---|---:|---:|---|---:|---:|---:|
$rows
![persons](charts/persons.svg)"
fi

# ---- 7. p99 while plugins swap and the config reloads every second ----
if want reload; then
    log "reload under load"
    free_port port
    rl_conf() { # TAG — a config text that differs with every reload; the
        # database settings stay, so connections survive (a change there
        # would reconnect every loop each second: a different test)
        weft_conf "$TMP/rl.conf.new" "$port" "# reload $1
database = { conninfo = \"dbname=weft\"; };
routes = ( $routes_hello $persons_routes );"
        mv "$TMP/rl.conf.new" "$TMP/rl.conf"
    }
    rl_conf 0
    start_weft "$TMP/rl.conf" "$port"
    reloader() { # every second: swap hello.so and persons.so by rename, then SIGHUP with a changed config
        local i=0
        while :; do
            sleep 0.5
            for so in hello persons; do
                cp "$BUILD/plugins/$so.so" "$TMP/plugins/.$so.new" && mv "$TMP/plugins/.$so.new" "$TMP/plugins/$so.so"
            done
            sleep 0.5
            i=$((i + 1)); rl_conf "$i"; kill -HUP "$WPID"
        done
    }
    rows="" chart=""
    for target in "/hello|$TMP/report.lua" "/coroutine/persons/|$TMP/random.lua"; do
        IFS='|' read -r path script <<<"$target"
        declare -A p99=()
        for mode in without with; do
            rl_once() {
                local rp=
                if [[ $mode == with ]]; then reloader & rp=$!; fi
                # p99 first: it is the figure repeat() takes the median of
                run_wrk 100 "$SECS" "http://127.0.0.1:$port$path" "$script" | awk '{ split($3, a, "="); print a[2], "rps=" $1, $2, $4 }'
                if [[ -n $rp ]]; then kill "$rp"; wait "$rp" 2>/dev/null || true; fi
            }
            repeat rl_once
            p99[$mode]=$R_MED
            rows+="| $path | $mode | $(fmt1 "$R_MED" "$R_MIN" "$R_MAX")$(flag) | $(field errors) |"$'\n'
            chart+="$path $mode reloads|$R_MED|$R_MIN|$R_MAX|"$'\n'
        done
        d=$(awk -v a="${p99[with]}" -v b="${p99[without]}" 'BEGIN { printf "%+.1f", a - b }')
        rows+="| $path | **difference** | **$d ms** | target ≤ +5 ms — $(met "$d" 5 le) |"$'\n'
    done
    stop_pid "$WPID"
    printf '%s' "$chart" | svg_bars "$CHARTS/reload.svg" "p99 latency with and without a reload every second" "ms"
    add_section reload "### Reload under load

\`wrk -t2 -c100 -d${SECS}s\`; \"with\": every second hello.so and persons.so are replaced by rename and the config is
changed and reloaded (SIGHUP), ${SECS} reloads per run. p99 in ms, median of 3 (min–max).

| path | reloads | p99 ms | errors |
|---|---|---:|---:|
$rows
![reload](charts/reload.svg)"
fi

printf '%s' "$SECTIONS"
if ((WRITE)); then log "wrote $DOC and $CHARTS"; fi

#!/usr/bin/env bash
#
# bench/db_share.sh — where the CPU of a persons request goes, next to
# pgbench on the same cluster: CPU time per request of the load generator
# (wrk or pgbench, `perf stat -e task-clock`), of weft and of PostgreSQL
# (/proc/PID/stat; the postmaster's cutime/cstime count backends that exited).
# Figures that survive a loaded machine, unlike req/s. The source of
# docs/BENCHMARKS.md's "The database path and c10k misses, analysed".
#
#   bench/db_share.sh [SECONDS]          # default 4 s per run
#
# Environment: WEFT_BUILD (default <repo>/build-bench, built beforehand),
# POLICIES (default "pool coroutine reactive"; "hello" for the HTTP floor),
# NOPGB=1 (skip pgbench).
#
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${WEFT_BUILD:-$ROOT/build-bench}
S=${1:-4}
T=$(mktemp -d "${TMPDIR:-/tmp}/weft-share.XXXXXX")
P=
cleanup() {
    [[ -n $P ]] && { kill "$P" 2>/dev/null || true; wait "$P" 2>/dev/null || true; }
    "$ROOT/packaging/pgdev.sh" stop "$T/pg" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
for t in wrk perf; do command -v $t >/dev/null || { echo "$t missing: packaging/install-deps.sh bench" >&2; exit 1; }; done
pgb=(/usr/lib/postgresql/*/bin/pgbench)
PGBENCH=$(command -v pgbench || echo "${pgb[-1]}")
"$ROOT/packaging/pgdev.sh" start "$T/pg" >/dev/null 2>&1
eval "$("$ROOT/packaging/pgdev.sh" env "$T/pg")"
hz=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
pg_ticks() {
    local pm t p
    pm=$(head -1 "$T/pg/data/postmaster.pid")
    t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
    for p in $(pgrep -P "$pm"); do t=$((t + $(ticks "$p"))); done
    echo "$t"
}
cat >"$T/weft.conf" <<CONF
threads = 2;
listen = ["127.0.0.1:0"];
plugin_dirs = [ "$B/plugins" ];
admin = false;
log = { level = "info"; };
database = { conninfo = "dbname=weft"; };
pools = ({ name = "default"; size = 200; queue = 10000; });
routes = (
  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; },
  { path = "/pool/persons/{id}"; plugin = "persons"; dispatch = "pool"; methods = ["GET"]; },
  { path = "/coroutine/persons/{id}"; plugin = "persons"; dispatch = "coroutine"; methods = ["GET"]; },
  { path = "/reactive/persons/{id}"; plugin = "persons"; dispatch = "reactive"; methods = ["GET"]; }
);
CONF
cat >"$T/random.lua" <<'LUA'
math.randomseed(os.time())
request = function() return wrk.format("GET", wrk.path .. math.random(1, 1000)) end
LUA
# The persons query itself, so that its cost is not mistaken for the path's.
cat >"$T/persons.sql" <<'SQL'
\set id random(1, 1000)
SELECT json_build_object('id', id, 'name', name, 'age', age, 'gender', gender)::text FROM person WHERE id = :id::int;
SQL
"$B/server/weft" -c "$T/weft.conf" 2>"$T/log" &
P=$!
for _ in $(seq 50); do grep -q "info  listening on" "$T/log" && break; sleep 0.1; done
PORT=$(grep -o "info  listening on http://127.0.0.1:[0-9]*" "$T/log" | sed 's/.*://')
[[ -n $PORT ]] || { cat "$T/log" >&2; exit 1; }
# report NAME REQUESTS CLIENT_MS WEFT_TICKS PG_TICKS
report() {
    awk -v n="$1" -v r="$2" -v c="$3" -v w="$4" -v g="$5" -v s="$S" -v hz="$hz" 'BEGIN {
        cu = 1e3 * c / r; wu = 1e6 * w / hz / r; gu = 1e6 * g / hz / r
        printf "%-28s %7.0f req/s | CPU us per request: client %5.1f  weft %5.1f  postgres %5.1f  total %5.1f\n",
            n, r / s, cu, wu, gu, cu + wu + gu }'
}
for pol in ${POLICIES:-pool coroutine reactive}; do
    url=http://127.0.0.1:$PORT/$pol/persons/
    [[ $pol == hello ]] && url=http://127.0.0.1:$PORT/hello
    wrk -t2 -c100 -d1s -s "$T/random.lua" "$url" >/dev/null # warm-up: statements prepared
    w0=$(ticks "$P") g0=$(pg_ticks)
    perf stat -x, -e task-clock -o "$T/client" wrk -t2 -c100 -d"${S}s" -s "$T/random.lua" "$url" >"$T/wrk"
    w1=$(ticks "$P") g1=$(pg_ticks)
    report "$pol (wrk -c100)" "$(awk '/requests in/ { print $1 }' "$T/wrk")" \
        "$(awk -F, '/task-clock/ { print $1 }' "$T/client")" $((w1 - w0)) $((g1 - g0))
done
[[ -n ${NOPGB:-} ]] && exit 0
"$PGBENCH" -i -q -s 1 >/dev/null 2>&1
for mode in "-S" "-f $T/persons.sql"; do
    g0=$(pg_ticks)
    # shellcheck disable=SC2086 # mode is two words for -f
    perf stat -x, -e task-clock -o "$T/client" "$PGBENCH" -n $mode -M prepared -c 32 -j 2 -T "$S" >"$T/pgb" 2>&1
    g1=$(pg_ticks)
    report "pgbench ${mode%% *} -c32" "$(awk '/actually processed/ { print $NF }' "$T/pgb")" \
        "$(awk -F, '/task-clock/ { print $1 }' "$T/client")" 0 $((g1 - g0))
done

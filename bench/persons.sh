#!/usr/bin/env bash
#
# bench/persons.sh — GET /{pool,coroutine,reactive}/persons/{id} with random
# ids 1..1000 at 100 connections, next to `pgbench -S -M prepared` on the
# same private PostgreSQL and machine as the upper limit.
#
#   bench/persons.sh            # print a Markdown section to stdout
#   bench/persons.sh --write    # ... and put it into docs/BENCHMARKS.md
#
# Environment: BENCH_SECONDS (default 10), WEFT_BUILD (default build-bench).
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${BENCH_SECONDS:-10}
CONNS=100
DOC=$ROOT/docs/BENCHMARKS.md
BEGIN_MARK='<!-- persons:begin -->'
END_MARK='<!-- persons:end -->'
WRITE=0
[[ ${1:-} == --write ]] && WRITE=1

TMP=$(mktemp -d /tmp/wpb.XXXXXX)
PGDIR=$TMP/pg
WEFT_PID=
cleanup() {
    [[ -n $WEFT_PID ]] && kill "$WEFT_PID" 2>/dev/null && wait "$WEFT_PID" 2>/dev/null || true
    "$ROOT/packaging/pgdev.sh" stop "$PGDIR" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "persons.sh: $*" >&2; }

command -v wrk >/dev/null || { log "wrk is not installed (apt-get install wrk)"; exit 1; }
command -v pgbench >/dev/null || PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin | tail -1)

log "building (Release) into $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null

"$ROOT/packaging/pgdev.sh" start "$PGDIR" >&2
eval "$("$ROOT/packaging/pgdev.sh" env "$PGDIR")"

# pgbench's own read-only workload: one indexed primary-key SELECT per
# transaction over the same socket — what the persons GET does, minus HTTP.
log "pgbench -i (scale 1) and pgbench -S -M prepared -c $CONNS for ${SECS}s"
createdb pgbench
pgbench -i -q -s 1 pgbench >/dev/null 2>&1
PGB=$(pgbench -S -M prepared -c "$CONNS" -j 2 -T "$SECS" pgbench 2>/dev/null)
PGB_TPS=$(echo "$PGB" | awk '/^tps/ {print int($3); exit}')
log "pgbench: $PGB_TPS tps"

cat > "$TMP/weft.conf" <<CONF
threads = $(nproc);
listen = ["127.0.0.1:0"];
admin = false;
log = { level = "info"; };
database = { conninfo = "dbname=weft"; loop_connections = 2; statement_timeout_ms = 5000; };
pools = ({ name = "default"; size = 200; queue = 10000; });
routes = (
  { path = "/pool/persons/{id}"; plugin = "persons"; dispatch = "pool"; methods = ["GET"]; },
  { path = "/coroutine/persons/{id}"; plugin = "persons"; dispatch = "coroutine"; methods = ["GET"]; },
  { path = "/reactive/persons/{id}"; plugin = "persons"; dispatch = "reactive"; methods = ["GET"]; }
);
CONF
cat > "$TMP/random.lua" <<'LUA'
-- random ids 1..1000 (the seeded persons)
math.randomseed(os.time())
request = function()
  return wrk.format("GET", wrk.path .. math.random(1, 1000))
end
LUA

WEFT_PLUGIN_PATH=$BUILD/plugins "$BUILD/server/weft" -c "$TMP/weft.conf" 2>"$TMP/weft.log" &
WEFT_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$TMP/weft.log" && break; sleep 0.1; done
PORT=$(grep -o "listening on http://127.0.0.1:[0-9]*" "$TMP/weft.log" | head -1 | sed "s/.*://") || { log "weft did not start:"; cat "$TMP/weft.log" >&2; exit 1; }

rows=""
for policy in pool coroutine reactive; do
    url="http://127.0.0.1:$PORT/$policy/persons/"
    wrk -t2 -c"$CONNS" -d2s -s "$TMP/random.lua" "$url" >/dev/null 2>&1 # warm-up
    out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -s "$TMP/random.lua" "$url" 2>&1)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print int($2)}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    sockerr=$(echo "$out" | awk -F'[ ,]+' '/Socket errors/ {print $4+$6+$8+$10}')
    non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
    errors=$(( ${sockerr:-0} + ${non2xx:-0} ))
    rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/$WEFT_PID/status)
    ratio=$(awk -v a="$rps" -v b="$PGB_TPS" 'BEGIN {printf "%.0f", 100*a/b}')
    target=$([[ $policy == pool ]] && echo 40 || echo 60)
    met=$(awk -v r="$ratio" -v t="$target" -v e="$errors" 'BEGIN {print (r >= t && e == 0) ? "met" : "missed"}')
    log "$policy: $rps req/s ($ratio % of pgbench), p50 $p50, p99 $p99, errors $errors"
    rows+="| $policy | $rps | $ratio % | ≥ $target % — $met | $p50 | $p99 | $errors | $rss |"$'\n'
done

section=$(cat <<MD
$BEGIN_MARK
### PostgreSQL: GET /{policy}/persons/{id} (random ids 1..1000, $CONNS connections)

Upper limit: \`pgbench -S -M prepared -c $CONNS -j 2 -T $SECS\` on the same private
PostgreSQL 15 cluster (unix socket, scale 1): **$PGB_TPS tps**. weft runs
$(nproc) event loops with 2 pipelined connections each, shared by all
three policies (\`pool_connections = 0\`, the default). wrk and PostgreSQL share
the machine's $(nproc) cores with weft, so all three compete for CPU.

Command: \`BENCH_SECONDS=$SECS bench/persons.sh --write\` ($(date -u +%Y-%m-%d)).

| policy | req/s | of pgbench | target | p50 | p99 | errors | peak RSS MiB (cumulative) |
|---|---|---|---|---|---|---|---|
$rows
$END_MARK
MD
)
echo "$section"
if (( WRITE )); then
    replace_section "$DOC" "$BEGIN_MARK" "$END_MARK" "$section"
    log "wrote $DOC"
fi

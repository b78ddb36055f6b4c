#!/usr/bin/env bash
# Transfer benchmark (issue 16): POST /{policy}/accounts/transfer with random
# accounts and amounts, req/s per dispatch policy, next to pgbench running the
# same transaction as a custom script (BEGIN; both rows locked in id order
# with SELECT ... ORDER BY id FOR UPDATE; one UPDATE of both; COMMIT) on the
# same private PostgreSQL. At the end the total balance must still be
# 100,000 and no balance negative, or the script fails.
#
#   bench/transfer.sh [--write]     --write puts the table into docs/BENCHMARKS.md
#
# Environment: BENCH_SECONDS (seconds per run, default 5), BENCH_CONNS
# (concurrent clients for wrk and pgbench, default 32), WEFT_BUILD (a build
# directory with server/weft and plugins/; built as Release into
# <repo>/build-bench when it has none). One run per figure: on a shared
# machine the figures are indicative, the ratios less so (both sides share
# the same cores and the same cluster).
#
# Needs wrk, curl, pgbench (postgresql), psql.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${BENCH_SECONDS:-5}
CONNS=${BENCH_CONNS:-32}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup transfer "$@"

command -v pgbench >/dev/null || PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)
for t in wrk curl pgbench psql; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done

if [[ ! -x $BUILD/server/weft ]]; then
    log "building weft (Release) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "build failed"; }
fi
BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt")

"$ROOT/packaging/pgdev.sh" start "$TMP/pg" >/dev/null
eval "$("$ROOT/packaging/pgdev.sh" env "$TMP/pg")"
books() { psql -XAtqc "SELECT sum(balance) || ' ' || count(*) FILTER (WHERE balance < 0) FROM account"; }
[[ $(books) == "100000 0" ]] || die "the seeded accounts do not add up to 100,000: $(books)"

# ---- pgbench: the plugin's transaction as a custom script ----
# The amount is checked in the UPDATE's WHERE (the plugin checks it between
# the two statements, holding the same locks): an overdraw changes nothing.
cat >"$TMP/transfer.sql" <<'EOF'
\set from random(1, 100)
\set to random(1, 99)
\if :to >= :from
\set to :to + 1
\endif
\set amount random(1, 100)
BEGIN;
SELECT id, balance FROM account WHERE id IN (CAST(:from AS int), CAST(:to AS int)) ORDER BY id FOR UPDATE;
UPDATE account SET balance = balance + CASE WHEN id = CAST(:from AS int) THEN -CAST(:amount AS bigint) ELSE CAST(:amount AS bigint) END WHERE id IN (CAST(:from AS int), CAST(:to AS int)) AND (SELECT balance FROM account WHERE id = CAST(:from AS int)) >= CAST(:amount AS bigint) RETURNING id, balance;
COMMIT;
EOF
log "pgbench -f transfer.sql -M prepared -c $CONNS, ${SECS} s"
pg_tps=$( (pgbench -n -f "$TMP/transfer.sql" -M prepared -c "$CONNS" -j 2 -T "$SECS" 2>"$TMP/pgbench.err" || true) |
    awk '/^tps/ && !/NaN/ { printf "%.0f\n", $3; exit }')
[[ -n $pg_tps ]] || { cat "$TMP/pgbench.err" >&2; die "pgbench gave no tps"; }

# ---- weft ----
cat >"$TMP/transfer.lua" <<'EOF'
local n = 0
setup = function(thread) n = n + 1; thread:set("seed", n) end
init = function() math.randomseed(os.time() * 100 + seed) end
request = function()
  local from = math.random(1, 100)
  local to = math.random(1, 99)
  if to >= from then to = to + 1 end
  local body = string.format('{"from":%d,"to":%d,"amount":%d}', from, to, math.random(1, 100))
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout))
end
EOF
mkdir -p "$TMP/plugins"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"
port=
free_port port
cat >"$TMP/weft.conf" <<EOF
threads = $(nproc);
listen = [ "127.0.0.1:$port" ];
plugin_dirs = [ "$TMP/plugins" ];
admin = false;
log = { level = "warn"; };
shutdown = { grace_s = 1; };
pools = ({ name = "default"; size = 64; queue = 10000; });
database = { conninfo = "dbname=weft"; tx_connections = 16; tx_wait_ms = 10000; };
routes = (
  { path = "/pool/accounts/transfer"; plugin = "accounts"; dispatch = "pool"; methods = ["POST"]; },
  { path = "/coroutine/accounts/transfer"; plugin = "accounts"; dispatch = "coroutine"; methods = ["POST"]; },
  { path = "/reactive/accounts/transfer"; plugin = "accounts"; dispatch = "reactive"; methods = ["POST"]; }
);
EOF
"$BUILD/server/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
WPID=$!
PIDS+=("$WPID")
wait_http "http://127.0.0.1:$port/"

rows="| pgbench -f transfer.sql -M prepared -c $CONNS | $pg_tps | 1.00 | – | – | – |"$'\n'
for policy in pool coroutine reactive; do
    log "wrk -c$CONNS POST /$policy/accounts/transfer, ${SECS} s"
    out=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --timeout 10s -s "$TMP/transfer.lua" \
        "http://127.0.0.1:$port/$policy/accounts/transfer" 2>&1) || die "wrk failed: $out"
    res=$(awk '/^RESULT/ { printf "%.0f %.2f %.2f %d", $2 / ($3 / 1e6), $4 / 1000, $5 / 1000, $6 }' <<<"$out")
    [[ -n $res ]] || die "wrk gave no result: $out"
    read -r rps p50 p99 sockerr <<<"$res"
    non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
    ratio=$(awk -v a="$rps" -v b="$pg_tps" 'BEGIN { printf "%.2f", a / b }')
    rows+="| $policy (wrk -c$CONNS, HTTP/1.1) | $rps | $ratio | $p50 | $p99 | ${non2xx:-0} (socket errors $sockerr) |"$'\n'
done
stop_pid "$WPID"

final=$(books)
[[ $final == "100000 0" ]] || die "the books do not balance after the run: sum, negatives = $final"
log "total balance after the run: ${final% *}, negative balances: ${final#* }"

section="<!-- transfer:begin -->
### Transfers: POST /{policy}/accounts/transfer against pgbench

\`bench/transfer.sh\`: random transfers among the 100 accounts (amount 1..100) by $CONNS concurrent clients for
${SECS} s each, weft (${BUILD_TYPE:-RelWithDebInfo} build, $(nproc) loops, \`tx_connections = 16\`, HTTP/1.1 keep-alive, wrk) next to
pgbench running the same transaction as a custom script (\`-f\`, \`-M prepared\`: BEGIN, both rows locked in id
order with \`SELECT … ORDER BY id FOR UPDATE\`, one UPDATE of both, COMMIT) on the same private PostgreSQL 15
(\`packaging/pgdev.sh\`, unix socket). \"not 200\" counts 409 answers (a refused overdraw, rolled back) and
anything else. After the run the total balance was ${final% *} with ${final#* } negative balances (checked by the
script, which fails otherwise).

| client | transfers/s | of pgbench | p50 ms | p99 ms | not 200 |
|---|---:|---:|---:|---:|---:|
$rows
_$(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?"), one run per
figure; 1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores shared with other jobs:
indicative figures._
<!-- transfer:end -->"
printf '%s\n' "$section"
((WRITE)) && replace_section "$DOC" "<!-- transfer:begin -->" "<!-- transfer:end -->" "$section"
exit 0

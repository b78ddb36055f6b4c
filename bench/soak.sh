#!/usr/bin/env bash
#
# bench/soak.sh — mixed load on every route and policy for SOAK_SECONDS
# (default 600), with a plugin swap and a config reload every 10 s. Reports
# the request count, errors (target 0), and RSS and open fds at start and
# end (target: flat). Not part of CI: it takes ten minutes.
#
#   bench/soak.sh [--write]      (--write: put the result into docs/BENCHMARKS.md)
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECS=${SOAK_SECONDS:-600}
DOC=$ROOT/docs/BENCHMARKS.md
BEGIN_MARK='<!-- soak:begin -->'
END_MARK='<!-- soak:end -->'
WRITE=0
[[ ${1:-} == --write ]] && WRITE=1

TMP=$(mktemp -d /tmp/wsoak.XXXXXX)
WEFT_PID=
cleanup() {
    [[ -n $WEFT_PID ]] && kill "$WEFT_PID" 2>/dev/null && wait "$WEFT_PID" 2>/dev/null || true
    "$ROOT/packaging/pgdev.sh" stop "$TMP/pg" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "soak.sh: $*" >&2; }

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
"$ROOT/packaging/pgdev.sh" start "$TMP/pg" >&2
eval "$("$ROOT/packaging/pgdev.sh" env "$TMP/pg")"

# A private plugin directory, so swapping delay.so touches nothing else.
mkdir -m 0700 "$TMP/plugins"
cp "$BUILD"/plugins/*.so "$TMP/plugins/"
write_conf() { # $1: a tag that changes with every reload
    sed -e "s|^plugin_dirs = .*|plugin_dirs = [\"$TMP/plugins\"];|" \
        -e 's|^listen = .*|listen = [ "127.0.0.1:0" ];|' \
        -e 's|^admin = .*|admin = false;|' -e '/^pid_file/d' \
        -e "s|options = { ms = 200; }|options = { ms = $((20 + $1 % 5)); }|" \
        -e 's|hold_ms = 100|hold_ms = 5|' \
        "$ROOT/etc/weft.conf" > "$TMP/weft.conf.new"
    mv "$TMP/weft.conf.new" "$TMP/weft.conf"
}
write_conf 0
"$BUILD/server/weft" -c "$TMP/weft.conf" 2>"$TMP/weft.log" &
WEFT_PID=$!
for _ in $(seq 50); do grep -q "listening on" "$TMP/weft.log" && break; sleep 0.1; done
PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$TMP/weft.log" | head -1 | sed 's/.*://')

cat > "$TMP/mixed.lua" <<'LUA'
-- every workload under every policy, the persons reads included
local paths = {}
for _, p in ipairs({"pool", "coroutine", "reactive"}) do
  for _, w in ipairs({"cpu", "delay", "locked"}) do table.insert(paths, "/" .. p .. "/" .. w) end
  table.insert(paths, "/" .. p .. "/persons/")
end
table.insert(paths, "/hello")
math.randomseed(os.time())
request = function()
  local path = paths[math.random(#paths)]
  if path:sub(-1) == "/" then path = path .. math.random(1, 1000) end
  return wrk.format("GET", path)
end
response = function(status)
  if status ~= 200 then bad = (bad or 0) + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("soak-summary requests=%d\n", summary.requests))
end
LUA

rss() { awk '/VmRSS/ {print $2}' /proc/$WEFT_PID/status; }
fds() { ls /proc/$WEFT_PID/fd | wc -l; }
log "soaking for ${SECS}s on port $PORT"
wrk -t2 -c64 -d"${SECS}s" --timeout 10s -s "$TMP/mixed.lua" "http://127.0.0.1:$PORT" > "$TMP/wrk.out" 2>&1 &
WRK=$!
swaps=0; reloads=0; i=0
RSS0=; FD0=
while kill -0 "$WRK" 2>/dev/null; do
    # "start" is sampled after 20 s of load: lazily opened database
    # connections, touched pool stacks and caches are warm-up, not growth.
    if [[ -z $RSS0 && $i -ge 2 ]]; then RSS0=$(rss); FD0=$(fds); log "start sample: RSS ${RSS0} KiB, ${FD0} fds"; fi
    # "end" is the last sample taken under the same load (64 client sockets open)
    if [[ -n $RSS0 ]]; then RSS1=$(rss); FD1=$(fds); fi
    sleep 5
    cp "$BUILD/plugins/delay.so" "$TMP/plugins/.delay.so.new" && mv "$TMP/plugins/.delay.so.new" "$TMP/plugins/delay.so"
    swaps=$((swaps + 1))
    sleep 5
    i=$((i + 1)); write_conf "$i"; kill -HUP "$WEFT_PID"; reloads=$((reloads + 1))
done
wait "$WRK" || true
RSS0=${RSS0:-$(rss)}; FD0=${FD0:-$(fds)}
RSS1=${RSS1:-$(rss)}; FD1=${FD1:-$(fds)}
REQS=$(awk '/requests in/ {print $1}' "$TMP/wrk.out")
NON2XX=$(awk '/Non-2xx/ {print $NF}' "$TMP/wrk.out"); NON2XX=${NON2XX:-0}
SOCK=$(awk -F'[ ,]+' '/Socket errors/ {print $4+$6+$8+$10}' "$TMP/wrk.out"); SOCK=${SOCK:-0}
REFUSED=$(grep -c "refused" "$TMP/weft.log" || true)
OKRELOADS=$(grep -c "reload: generation .* serving" "$TMP/weft.log" || true)
log "requests $REQS, non-2xx $NON2XX, socket errors $SOCK, RSS $RSS0 -> $RSS1 KiB, fds $FD0 -> $FD1"

section=$(cat <<MD
$BEGIN_MARK
### Soak: mixed load with swaps and reloads

$((SECS / 60)) minutes of \`wrk -t2 -c64\` spread at random over every route and policy
(cpu, delay, locked, persons reads, hello), with \`delay.so\` replaced by rename
every 10 s and the config edited and reloaded (SIGHUP) every 10 s.
Command: \`SOAK_SECONDS=$SECS bench/soak.sh --write\` ($(date -u +%Y-%m-%d)).

| requests | non-2xx | socket errors | plugin swaps | config reloads | generations applied | RSS after 20 s → last 10 s | fds after 20 s → last 10 s |
|---|---|---|---|---|---|---|---|
| $REQS | $NON2XX | $SOCK | $swaps | $reloads | $OKRELOADS | $((RSS0 / 1024)) → $((RSS1 / 1024)) MiB | $FD0 → $FD1 |

Targets: errors 0 — $([[ $NON2XX == 0 && $SOCK == 0 ]] && echo met || echo missed);
RSS and fds flat — $([[ $FD0 == "$FD1" ]] && echo "fds met" || echo "fds missed"), RSS grew $(((RSS1 - RSS0) / 1024)) MiB.
$END_MARK
MD
)
echo "$section"
if (( WRITE )); then
    replace_section "$DOC" "$BEGIN_MARK" "$END_MARK" "$section"
    log "wrote $DOC"
fi

#!/usr/bin/env bash
#
# bench/router_build.sh — how long a weft with one huge route fragment takes
# to start serving (issue 30, item 9: a 17 MB NAME.routes with 200,001
# routes kept the control thread busy ~115 s while the router was built by
# scanning each node's literal children).
#
#   bench/router_build.sh [WEFT_BINARY] [ROUTES]   # default 200001 routes
#
# Prints "routes=N bytes=B start_s=S check_s=C": S from exec to "listening
# on" (probe child, route init and the router of the serving generation), C
# for `weft -t` on the same config. limits.max_route_file_routes and
# max_route_file_size are raised to fit. Environment: WEFT_BUILD (default
# <repo>/build; the binary is $WEFT_BUILD/server/weft, plugins in ../plugins).
#
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build}
WEFT=${1:-$BUILD/server/weft}
N=${2:-200001}
PLUGINS=$(cd "$(dirname "$WEFT")/../plugins" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-router.XXXXXX")
chmod 755 "$TMP"
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

mkdir -m 755 "$TMP/plugins"
cp "$PLUGINS/hello.so" "$TMP/plugins/"
awk -v n="$N" 'BEGIN {
    print "routes = ("
    for (i = 0; i < n; i++)
        printf "  { path = \"/r/%d\"; plugin = \"hello\"; dispatch = \"reactive\"; }%s\n", i, i + 1 < n ? "," : ""
    print ");"
}' >"$TMP/plugins/hello.routes"
bytes=$(stat -c %s "$TMP/plugins/hello.routes")
cat >"$TMP/weft.conf" <<CONF
threads = 1;
listen = [ "127.0.0.1:0" ];
plugin_dirs = [ "$TMP/plugins" ];
limits = { max_route_file_routes = $N; max_route_file_size = $((bytes + 1024)); };
routes = ();
CONF

t0=$(date +%s.%N)
"$WEFT" -t -c "$TMP/weft.conf" >"$TMP/check" 2>&1 || { cat "$TMP/check" >&2; exit 1; }
check_s=$(echo "$(date +%s.%N) - $t0" | bc)

: >"$TMP/log"
t0=$(date +%s.%N)
"$WEFT" -c "$TMP/weft.conf" 2>"$TMP/log" &
PID=$!
# Polls the server's own line, for up to 30 minutes: a quadratic build took two.
for _ in $(seq 18000); do grep -q "info  listening on http\|not starting" "$TMP/log" && break; sleep 0.1; done
start_s=$(echo "$(date +%s.%N) - $t0" | bc)
port=$(grep -o "info  listening on http://127.0.0.1:[0-9]*" "$TMP/log" | head -1 | sed "s/.*://" || true)
[[ -n $port ]] || { cat "$TMP/log" >&2; echo "router_build.sh: weft did not start" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/r/$((N - 1))")
[[ $code == 200 ]] || { echo "router_build.sh: /r/$((N - 1)) answered $code" >&2; exit 1; }
echo "routes=$N bytes=$bytes start_s=$start_s check_s=$check_s"

#!/usr/bin/env bash
#
# bench/rss_idle.sh — resident memory of an idle weft serving the default
# configuration (etc/weft.conf) without its database routes, with no PG*
# variable in the environment: the server must not map libpq then.
#
#   bench/rss_idle.sh [WEFT_BINARY]    # prints "rss_kib=N libpq_mapped=0|1 ..."
#
# Environment: WEFT_BUILD (default <repo>/build-bench; the binary is
# $WEFT_BUILD/server/weft and plugins next to it in ../plugins).
#
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
WEFT=${1:-$BUILD/server/weft}
PLUGINS=$(cd "$(dirname "$WEFT")/../plugins" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-rss.XXXXXX")
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

# The default config, its persons routes and pid file left out, on a port
# of the kernel's choosing, plugins from the build.
grep -v 'plugin = "persons"' "$ROOT/etc/weft.conf" |
    awk '{ line[NR] = $0 } $0 !~ /^[ \t]*(#|$)/ && $0 !~ /^\);/ { real = NR }
         /^\);/ { sub(/,[ \t]*$/, "", line[real]) }
         END { for (i = 1; i <= NR; i++) print line[i] }' |
    sed -e 's|^listen = .*|listen = [ "127.0.0.1:0" ];|' \
        -e "s|^plugin_dirs = .*|plugin_dirs = [ \"$PLUGINS\" ];|" \
        -e 's|^pid_file = .*||' -e 's|^admin = .*|admin = { listen = "127.0.0.1:0"; };|' >"$TMP/weft.conf"
: >"$TMP/log"
# No PG* variable: with one set, weft would load libpq (docs/DATABASE.md).
env $(env | awk -F= '/^PG/ {printf "-u %s ", $1}') "$WEFT" -c "$TMP/weft.conf" 2>"$TMP/log" &
PID=$!
for _ in $(seq 100); do grep -q "info  listening on http" "$TMP/log" && break; sleep 0.1; done
port=$(grep -o "info  listening on http://127.0.0.1:[0-9]*" "$TMP/log" | head -1 | sed "s/.*://" || true)
[[ -n $port ]] || { cat "$TMP/log" >&2; echo "rss_idle.sh: weft did not start" >&2; exit 1; }
curl -fsS -o /dev/null "http://127.0.0.1:$port/hello"
sleep 1 # idle: threads parked, nothing in flight
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
anon=$(awk '/^RssAnon/ {print $2}' "/proc/$PID/status")
file=$(awk '/^RssFile/ {print $2}' "/proc/$PID/status")
libpq=$(grep -c 'libpq\.so' "/proc/$PID/maps" || true)
echo "rss_kib=$rss anon_kib=$anon file_kib=$file libpq_mapped=$((libpq > 0 ? 1 : 0))"

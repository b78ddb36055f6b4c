#!/bin/sh
# run.sh — the reference deployment of docs/CLUSTER.md on this machine, by
# hand: PostgreSQL (a private cluster), PgBouncer, three weft replicas,
# HAProxy and Prometheus, as packaging/check-cluster.sh starts them; then
# it waits until Ctrl-C (or SIGTERM) and stops them all.
#
#   sudo packaging/cluster/run.sh [DIR]
#
# DIR (default: a new /tmp/weft-cluster.XXXXXX) holds every log, pid file
# and the database. WEFT_BIN and WEFT_PLUGIN_PATH name the weft to run
# (default: build/server/weft and build/plugins). Then:
#   curl http://127.0.0.1:8000/hello                 through HAProxy
#   http://127.0.0.1:8404/stats                      HAProxy's servers
#   http://127.0.0.1:9090/alerts                     Prometheus: rules, alerts
#   sudo kill -TERM "$(cat DIR/w2/weft.pid)"         drain a replica
set -eu
if [ "$(id -u)" -ne 0 ]; then
  exec sudo -- env WEFT_BIN="${WEFT_BIN:-}" WEFT_PLUGIN_PATH="${WEFT_PLUGIN_PATH:-}" "$0" "$@"
fi
src=$(cd "$(dirname "$0")/../.." && pwd -P)
weft=${WEFT_BIN:-$src/build/server/weft}
case $weft in /*) ;; *) weft=$(pwd -P)/$weft ;; esac
WEFT_PLUGIN_PATH=${WEFT_PLUGIN_PATH:-$(dirname "$(dirname "$weft")")/plugins}
export WEFT_PLUGIN_PATH
cdir=${1:-$(mktemp -d /tmp/weft-cluster.XXXXXX)}
mkdir -p "$cdir"
cdir=$(cd "$cdir" && pwd -P)
chmod 755 "$cdir"
fail() {
  echo "run.sh: $*" >&2
  exit 1
}
note() { echo "run.sh: $*" >&2; }
. "$src/packaging/lib/cluster.sh"
trap 'cluster_stop' EXIT
trap 'kill "$!" 2>/dev/null; exit 0' INT TERM

[ -x "$weft" ] || fail "no weft binary at $weft (set WEFT_BIN)"
cluster_start
note "serving on $lb (HAProxy, stats on $lb_stats/stats); Prometheus on $prom; replicas on 127.0.0.2-4:8080 (admin :9901); PgBouncer on 127.0.0.1:$pgb_port; logs in $cdir. Ctrl-C stops it all."
# `wait` returns on a trapped signal; a sleep in the foreground would hold it.
while :; do
  sleep 3600 &
  wait $! || true
done

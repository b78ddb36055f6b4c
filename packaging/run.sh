#!/bin/sh
# Quick start, step 1: install what weft needs, build it, and serve
# etc/weft.conf on port 8080 from the build tree. When the config names no
# database and no PG* environment points at one, a private PostgreSQL
# cluster is started in .weft/pg (unix socket only), the schema and seed
# data in sql/ are applied, and the cluster stops with the server.
# Extra arguments go to weft (e.g. -t to only validate the config).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
conf=${WEFT_CONF:-$root/etc/weft.conf}
packaging/install-deps.sh run
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
export WEFT_PLUGIN_PATH="$root/build/plugins"

pgdir=""
if ! grep -Eq '^[[:space:]]*database[[:space:]]*[=:]' "$conf" && [ -z "${PGHOST:-}${PGSERVICE:-}${PGDATABASE:-}" ]; then
  pgdir="$root/.weft/pg"
  packaging/pgdev.sh start "$pgdir" >&2
  eval "$(packaging/pgdev.sh env "$pgdir")"
  echo "private PostgreSQL in $pgdir (socket only); it stops with the server" >&2
fi

"$root/build/server/weft" -c "$conf" "$@" &
pid=$!
# Forward Ctrl-C / SIGTERM to weft, wait for its graceful stop, then stop
# the private database.
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM
status=0
wait "$pid" || status=$?
# A signal interrupts `wait` (status 128+N) while weft is still stopping:
# wait again, so the script exits with weft's own status (0 on a clean stop).
if [ "$status" -gt 128 ]; then
  status=0
  wait "$pid" || status=$?
fi
[ -n "$pgdir" ] && packaging/pgdev.sh stop "$pgdir" >&2
exit "$status"

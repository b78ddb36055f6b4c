#!/bin/sh
# pgbouncer.sh MODE COMMAND... — runs COMMAND (a test binary) through a real
# PgBouncer (Debian's pgbouncer package) in pool mode MODE (transaction or
# session), in front of the PostgreSQL that PGHOST/PGPORT name (the unix
# socket of packaging/pgdev.sh's cluster).
#
# PgBouncer listens on 127.0.0.1 on a free port below the kernel's ephemeral
# range (one the kernel hands out for port 0 could be taken by another
# test's socket before PgBouncer binds it); COMMAND gets PGHOST/PGPORT
# pointing at it, WT_DB_POOLER=MODE (tests/support/harness.c puts
# `pooler = "MODE";` into each config's database group), and
# WT_PG_DIRECT=HOST:PORT for a test that needs PostgreSQL itself. Besides
# `weft` (the pool mode given), PgBouncer serves `weft_one`: the same
# database through a single server connection in transaction mode, which
# makes two clients' statements meet on one server connection every time.
# Exit status: COMMAND's; 1 when PgBouncer cannot be started.
set -eu

[ $# -ge 2 ] || { echo "usage: $0 transaction|session COMMAND..." >&2; exit 2; }
mode=$1
shift
case $mode in transaction | session) ;; *) echo "pgbouncer.sh: unknown pool mode '$mode'" >&2; exit 2 ;; esac
command -v pgbouncer >/dev/null 2>&1 || {
  echo "pgbouncer.sh: pgbouncer is not installed (Debian package pgbouncer; packaging/install-deps.sh test)" >&2
  exit 1
}
[ -n "${PGHOST:-}" ] || {
  echo "pgbouncer.sh: PGHOST is not set: start PostgreSQL first, e.g." >&2
  echo "  packaging/pgdev.sh start /tmp/wpg && eval \"\$(packaging/pgdev.sh env /tmp/wpg)\"" >&2
  exit 1
}
pg_host=$PGHOST
pg_port=${PGPORT:-5432}
pg_user=${PGUSER:-$(id -un)}

dir=$(mktemp -d /tmp/weft-pgbouncer.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# PgBouncer refuses to run as root; as root it runs as the user that owns
# pgdev.sh's cluster (postgres), which may enter the socket's directory.
as_user=
if [ "$(id -u)" -eq 0 ]; then
  as_user="-u postgres"
  chmod 0755 "$dir"
  chown postgres "$dir"
fi

low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
try=0
while :; do
  try=$((try + 1))
  port=$((10000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (low - 10000)))
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
weft = host=$pg_host port=$pg_port dbname=weft user=$pg_user
weft_one = host=$pg_host port=$pg_port dbname=weft user=$pg_user pool_size=1 pool_mode=transaction

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = any
pool_mode = $mode
max_client_conn = 2000
default_pool_size = 40
logfile = $dir/pgbouncer.log
INI
  [ -z "$as_user" ] || chown postgres "$dir/pgbouncer.ini"
  # shellcheck disable=SC2086
  pgbouncer $as_user "$dir/pgbouncer.ini" >"$dir/stdout" 2>&1 &
  pid=$!
  # Poll PgBouncer's own log for its ready line (or its exit), 10 s deadline.
  i=0
  while [ $i -lt 200 ]; do
    grep -q "process up" "$dir/pgbouncer.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
    i=$((i + 1))
  done
  if grep -q "process up" "$dir/pgbouncer.log" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
    break
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
  if [ $try -ge 20 ]; then
    echo "pgbouncer.sh: PgBouncer did not start:" >&2
    cat "$dir/stdout" "$dir/pgbouncer.log" >&2 2>/dev/null || true
    exit 1
  fi
  rm -f "$dir/pgbouncer.log"
done

echo "pgbouncer.sh: PgBouncer $(pgbouncer --version | head -1 | cut -d' ' -f2) in $mode mode on 127.0.0.1:$port" >&2
rc=0
PGHOST=127.0.0.1 PGPORT=$port WT_DB_POOLER=$mode WT_PG_DIRECT="$pg_host:$pg_port" "$@" || rc=$?
if [ $rc -ne 0 ]; then
  echo "pgbouncer.sh: the last lines of PgBouncer's log:" >&2
  tail -20 "$dir/pgbouncer.log" >&2 || true
fi
exit $rc

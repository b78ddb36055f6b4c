#!/bin/sh
# pgdev.sh — a private PostgreSQL cluster for developing and testing weft.
#
#   pgdev.sh start DIR    create the cluster in DIR if needed, start it, create
#                         database "weft", apply sql/*.sql (idempotent)
#   pgdev.sh stop DIR     stop it (fast shutdown); fine if it is not running
#   pgdev.sh env DIR      print PGHOST/PGPORT/PGUSER/PGDATABASE for eval
#   pgdev.sh apply DIR [FILE...]  re-apply sql/*.sql in lexical order, or
#                         apply the FILEs given (fixtures of a test), in order
#   pgdev.sh status DIR   say whether it runs; exit 0 running, 3 stopped, 4 no cluster
#
# The cluster listens on a unix socket in DIR only (no TCP), and trusts every
# local connection: DIR is mode 0700, so only its owner (and root) can reach
# the socket. Data lives in DIR/data, the server log in DIR/postgres.log.
# It never touches the system cluster Debian's postgresql package may create.
#
# initdb refuses to run as root, so as root the server runs as the "postgres"
# system user and DIR belongs to it; otherwise it runs as the caller. Either
# way the database superuser is "postgres".
#
# PG_BINDIR overrides where initdb, pg_ctl and postgres are looked for.
# Exit status 5 means the server programs are not installed (callers such as
# `weft dev` and the test kit skip the database then), 1 any other failure.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd -P)
sqldir=$root/sql
port=5432
# Lexical order of sql/*.sql must not depend on the caller's locale.
LC_ALL=C
export LC_ALL
# Our connections say exactly where they go: these would redirect them.
unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGPASSFILE 2>/dev/null || true

die() {
  echo "pgdev.sh: $*" >&2
  exit 1
}

# Exit 5: no server programs, which callers tell apart from a failure.
missing() {
  echo "pgdev.sh: $*" >&2
  exit 5
}

usage() {
  sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
[ $# -eq 0 ] || [ "$cmd" = apply ] || usage

# Quoting a path into postgresql.conf and shell output stays trivial when it
# has no spaces or quotes; a development cluster needs nothing more.
case $dir in
  "" | *[!A-Za-z0-9._/-]*) die "DIR '$dir' may contain only letters, digits and . _ / -" ;;
esac
case $dir in
  /*) ;;
  *) dir=$(pwd -P)/$dir ;;
esac
dir=${dir%/}
[ -n "$dir" ] || die "DIR must not be /"
# sun_path holds 108 bytes with the NUL; the socket is DIR/.s.PGSQL.5432.
sock=$dir/.s.PGSQL.$port
if [ ${#sock} -gt 107 ]; then
  die "DIR '$dir' is too long: the socket path '$sock' has ${#sock} bytes, unix sockets allow 107; use a shorter DIR (e.g. /tmp/wpg)"
fi
data=$dir/data
log=$dir/postgres.log

if [ "$(id -u)" -eq 0 ]; then
  as_root=1
  id postgres >/dev/null 2>&1 || die "no 'postgres' system user: install Debian's postgresql-15 (Debian 12) or postgresql-17 (Debian 13) package (it creates it)"
else
  as_root=0
fi

# Runs a PostgreSQL server program as the user that owns the cluster. From /
# because postgres cannot always read the caller's working directory; without
# fd 9, the lock of lock_dir, which a server started here would otherwise
# hold for its whole life.
as_owner() {
  if [ "$as_root" -eq 1 ]; then
    (cd / && runuser -u postgres -- "$@" 9>&-)
  else
    (cd / && "$@" 9>&-)
  fi
}

find_bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then
    [ -x "$PG_BINDIR/initdb" ] || missing "PG_BINDIR=$PG_BINDIR has no initdb"
    echo "$PG_BINDIR"
    return
  fi
  # pg_config may come from a newer libpq-dev than the installed server, so
  # only trust it when the server programs are really there.
  if command -v pg_config >/dev/null 2>&1; then
    b=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$b" ] && [ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ]; then
      echo "$b"
      return
    fi
  fi
  # Debian keeps each major version apart; take the newest one installed.
  best=""
  for b in /usr/lib/postgresql/*/bin; do
    [ -x "$b/initdb" ] || continue
    v=${b#/usr/lib/postgresql/}
    v=${v%/bin}
    if [ -z "$best" ] || [ "$v" -gt "${best_v:-0}" ] 2>/dev/null; then
      best=$b
      best_v=$v
    fi
  done
  [ -n "$best" ] || missing "no PostgreSQL server programs found: apt-get install postgresql-15 (Debian 12) or postgresql-17 (Debian 13), or set PG_BINDIR"
  echo "$best"
}

have_cluster() { [ -f "$data/PG_VERSION" ]; }

# 0 running, 3 not running, 4 no cluster — pg_ctl's own status codes.
cluster_state() {
  have_cluster || return 4
  if as_owner "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
    return 0
  fi
  return 3
}

# Clients run as the caller: they only need the socket, which root and the
# owner can reach. -X: a personal ~/.psqlrc must not change what we run;
# warnings only: "already exists, skipping" is the normal idempotent case.
psql_dev() {
  PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres "$@"
}

# As root the cluster belongs to postgres, which must be able to walk down to
# DIR: grant traversal (x only, not read) on any parent that denies it.
open_parents() {
  p=$(dirname "$dir")
  while [ "$p" != "/" ]; do
    if ! runuser -u postgres -- test -x "$p" 2>/dev/null; then
      echo "pgdev.sh: granting traversal (o+x) on $p so that postgres can reach $dir" >&2
      chmod o+x "$p"
    fi
    p=$(dirname "$p")
  done
}

prepare_dir() {
  mkdir -p "$dir"
  if [ "$as_root" -eq 1 ]; then
    open_parents
    chown postgres:postgres "$dir"
  fi
  # Trust authentication is only safe while nobody else can reach the socket.
  chmod 0700 "$dir"
}

init_cluster() {
  echo "pgdev.sh: creating a PostgreSQL cluster in $data" >&2
  # UTF8 with the C locale: the same sorting and behaviour on every machine.
  as_owner "$bin/initdb" -D "$data" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=reject --no-instructions >/dev/null
  # Socket only, in DIR; commits need not wait for the disk (a crash may lose
  # the last few transactions of this throwaway cluster, never corrupt it).
  cat >>"$data/postgresql.conf" <<EOF

# --- pgdev.sh: private development cluster ---
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
synchronous_commit = off
EOF
}

check_version() {
  want=$(cat "$data/PG_VERSION")
  have=$("$bin/pg_ctl" --version | sed -n 's/^[^0-9]*\([0-9][0-9]*\).*/\1/p')
  [ "$want" = "$have" ] || die "$data was created by PostgreSQL $want but $bin is PostgreSQL $have; remove $dir or set PG_BINDIR"
}

# sql/*.sql, or the files named on the command line.
apply_sql() {
  if [ $# -gt 0 ]; then
    for f in "$@"; do
      [ -r "$f" ] || die "cannot read $f"
      psql_dev -d weft -f "$f" >/dev/null || die "applying $f failed"
    done
    return
  fi
  [ -d "$sqldir" ] || die "no $sqldir directory"
  for f in "$sqldir"/*.sql; do
    [ -e "$f" ] || continue
    psql_dev -d weft -f "$f" >/dev/null || die "applying $f failed"
  done
}

# Two concurrent calls on one DIR (parallel test runs) take turns.
lock_dir() {
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.pgdev.lock"
    flock 9
  fi
}

case $cmd in
  start)
    bin=$(find_bindir)
    prepare_dir
    lock_dir
    have_cluster || init_cluster
    check_version
    state=0
    cluster_state || state=$?
    if [ "$state" -ne 0 ]; then
      if ! as_owner "$bin/pg_ctl" start -w -t 60 -D "$data" -l "$log" >/dev/null; then
        tail -n 20 "$log" >&2 2>/dev/null || true
        die "the server in $data did not start (log: $log)"
      fi
    fi
    exists=$(psql_dev -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = 'weft'")
    if [ "$exists" != "1" ]; then
      psql_dev -d postgres -c "CREATE DATABASE weft"
    fi
    apply_sql
    echo "pgdev.sh: PostgreSQL running on $sock, database weft ready" >&2
    ;;
  stop)
    have_cluster || exit 0
    bin=$(find_bindir)
    state=0
    cluster_state || state=$?
    [ "$state" -eq 0 ] || exit 0
    as_owner "$bin/pg_ctl" stop -w -m fast -D "$data" >/dev/null
    ;;
  env)
    echo "export PGHOST=$dir"
    echo "export PGPORT=$port"
    echo "export PGUSER=postgres"
    echo "export PGDATABASE=weft"
    ;;
  apply)
    have_cluster || die "no cluster in $dir: run '$0 start $dir' first"
    bin=$(find_bindir)
    lock_dir
    state=0
    cluster_state || state=$?
    [ "$state" -eq 0 ] || die "the cluster in $dir is not running: run '$0 start $dir'"
    apply_sql "$@"
    ;;
  status)
    if ! have_cluster; then
      echo "no cluster in $dir"
      exit 4
    fi
    bin=$(find_bindir)
    state=0
    cluster_state || state=$?
    if [ "$state" -eq 0 ]; then
      echo "running: socket $sock, data $data, log $log"
      exit 0
    fi
    echo "stopped: data $data"
    exit 3
    ;;
  *) usage ;;
esac

# shellcheck shell=sh
# cluster.sh — sourced by packaging/cluster/run.sh and packaging/check-cluster.sh:
# the reference deployment of packaging/cluster/ (docs/CLUSTER.md) as real
# processes on this machine, each started in the background with its output
# in $cdir and waited for with a deadline.
#
# The caller sets, before sourcing:
#   src        the source tree
#   cdir       a private directory for everything the deployment writes
#   weft       the weft binary; WEFT_PLUGIN_PATH its plugins (exported)
# and defines `fail MESSAGE` (exits).
#
#   cluster_start                     all of what follows, in order
#   cluster_ports_free                fail unless every port below is free
#   cluster_pg_start / cluster_pgbouncer_start / cluster_haproxy_start /
#   cluster_prometheus_start           start one piece, wait until it answers
#   replica_start N                   weft replica N (1..3) on 127.0.0.$((N+1))
#   replica_stop N                    SIGTERM, wait for it to exit
#   replica_kill N                    SIGKILL
#   replica_upgrade N                 `weft upgrade` (the hand-over), wait
#   replica_pid N, replica_addr N
#   lb_status N, lb_field N FIELD     HAProxy's status of server wN (UP, DOWN, ...), a CSV column
#   lb_wait N STATUS SECONDS          until HAProxy says STATUS for wN
#   cluster_stop                      stop everything that runs (cleanup)
#
# WEFT_DB_MODE=direct (before replica_start) points the replicas at
# PostgreSQL itself instead of PgBouncer.

cluster_conf=$src/packaging/cluster
lb=http://127.0.0.1:8000
lb_stats=http://127.0.0.1:8404
prom=http://127.0.0.1:9090
pgb_port=6432
pgdir=$cdir/pg
WEFT_DB_MODE=${WEFT_DB_MODE:-pgbouncer}

replica_addr() { echo "127.0.0.$(($1 + 1))"; }
replica_run() { echo "$cdir/w$1"; }
replica_pid() { cat "$cdir/w$1/weft.pid" 2>/dev/null || true; }

# Running, not a zombie nobody reaped yet (a replica after `weft upgrade`
# is the old process's child, reparented when that one exits).
alive() {
  [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
  case $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) in
    Z | X | "") return 1 ;;
  esac
  return 0
}

# until_ok SECONDS WHAT CMD...: runs CMD every 0.1 s until it succeeds;
# fails with WHAT after SECONDS.
until_ok() {
  limit=$(($1 * 10)) what=$2
  shift 2
  i=0
  until "$@" >/dev/null 2>&1; do
    [ "$i" -lt "$limit" ] || fail "$what (after ${limit}00 ms)"
    sleep 0.1
    i=$((i + 1))
  done
}

cluster_ports_free() {
  busy=$(ss -Hltn | awk '{ print $4 }' | grep -E '^(127\.0\.0\.1:(8000|8404|9090|6432)|127\.0\.0\.[234]:(8080|9901)|(0\.0\.0\.0|\*|\[::\]):(8000|8404|9090|6432|8080|9901))$' || true)
  [ -z "$busy" ] || fail "ports the deployment needs are taken: $(echo "$busy" | tr '\n' ' ')(ss -ltnp says by what)"
}

cluster_pg_start() {
  "$src/packaging/pgdev.sh" start "$pgdir" >"$cdir/pgdev.log" 2>&1 || { cat "$cdir/pgdev.log" >&2; fail "PostgreSQL did not start"; }
}

# PgBouncer refuses to run as root: as the cluster's owner (postgres).
cluster_pgbouncer_start() {
  mkdir -p "$cdir/pgbouncer"
  sed -e "s|@PGHOST@|$pgdir|g" -e "s|@RUN@|$cdir/pgbouncer|g" "$cluster_conf/pgbouncer.ini" >"$cdir/pgbouncer/pgbouncer.ini"
  as=""
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres:postgres "$cdir/pgbouncer"
    as="setpriv --reuid=postgres --regid=postgres --init-groups"
  fi
  $as pgbouncer "$cdir/pgbouncer/pgbouncer.ini" >>"$cdir/pgbouncer/stderr.log" 2>&1 &
  until_ok 20 "PgBouncer does not answer on 127.0.0.1:$pgb_port (log: $cdir/pgbouncer/pgbouncer.log)" \
    psql -X -h 127.0.0.1 -p "$pgb_port" -U postgres -d weft -tAc "SELECT 1"
}

# Exports replica N's environment (packaging/cluster/weft.conf's header).
replica_exports() {
  WEFT_ADDR=$(replica_addr "$1") WEFT_RUN=$(replica_run "$1")
  WEFT_LISTEN_DB="host=$pgdir port=5432 dbname=weft user=postgres"
  if [ "$WEFT_DB_MODE" = direct ]; then
    WEFT_DB=$WEFT_LISTEN_DB WEFT_POOLER=none
  else
    WEFT_DB="host=127.0.0.1 port=$pgb_port dbname=weft user=postgres" WEFT_POOLER=transaction
  fi
  export WEFT_ADDR WEFT_RUN WEFT_LISTEN_DB WEFT_DB WEFT_POOLER
}

# Up once its admin listener serves /metrics from the process of its pid file.
replica_up() {
  p=$(replica_pid "$1")
  alive "$p" && curl -fsS -o /dev/null --max-time 1 "http://$(replica_addr "$1"):9901/metrics"
}
replica_start() {
  r=$(replica_run "$1")
  mkdir -p "$r"
  rm -f "$r/weft.pid"
  # A subshell that execs: $! is weft, and no shell holds the caller's output open.
  (
    replica_exports "$1"
    exec "$weft" -c "$cluster_conf/weft.conf"
  ) >>"$r/weft.log" 2>&1 &
  i=0
  until replica_up "$1"; do
    if [ "$i" -ge 200 ] || ! alive "$!"; then
      tail -n 20 "$r/weft.log" >&2
      fail "replica $1 ($(replica_addr "$1")) did not start"
    fi
    sleep 0.1
    i=$((i + 1))
  done
  remember "$(replica_pid "$1")"
}
replica_gone() { ! alive "$1"; }
# SIGTERM: shutdown.unready_ms of 503s, then the drain (grace_s 10 s).
replica_stop() {
  p=$(replica_pid "$1")
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null || return 0
  until_ok 20 "replica $1 (pid $p) did not exit after SIGTERM" replica_gone "$p"
}
replica_kill() {
  p=$(replica_pid "$1")
  kill -KILL "$p"
  until_ok 5 "replica $1 (pid $p) survived SIGKILL" replica_gone "$p"
  rm -f "$(replica_run "$1")/weft.pid"
}
# `weft upgrade`: the running replica starts the binary on disk, hands it
# its listening sockets and drains; returns once the old one has exited.
replica_upgrade() {
  old=$(replica_pid "$1")
  (
    replica_exports "$1"
    exec timeout 60 "$weft" upgrade -c "$cluster_conf/weft.conf"
  ) >>"$(replica_run "$1")/upgrade.log" 2>&1 </dev/null ||
    { tail -n 5 "$(replica_run "$1")/upgrade.log" >&2; fail "weft upgrade of replica $1 failed"; }
  new=$(replica_pid "$1")
  remember "$new"
  [ -n "$new" ] && [ "$new" != "$old" ] && alive "$new" || fail "weft upgrade of replica $1 left pid '$new' (was $old)"
}

cluster_haproxy_start() {
  mkdir -p "$cdir/haproxy"
  CLUSTER_RUN=$cdir/haproxy haproxy -db -f "$cluster_conf/haproxy.cfg" >>"$cdir/haproxy/haproxy.log" 2>&1 &
  echo $! >"$cdir/haproxy/pid"
  until_ok 20 "HAProxy does not answer on $lb_stats (log: $cdir/haproxy/haproxy.log)" curl -fsS "$lb_stats/stats;csv"
}
# lb_field N FIELD: a column of HAProxy's CSV for server wN: status (UP,
# DOWN, "UP 1/2" going down, "DOWN 1/2" coming up, ...), check_status
# (L7STS: a wrong answer, L4CON: refused), scur (sessions now), ...
lb_field() {
  curl -fsS --max-time 2 "$lb_stats/stats;csv" |
    awk -F, -v s="w$1" -v f="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == f || $i == "# " f) c = i; next } $1 == "weft" && $2 == s { print $c }'
}
lb_status() { lb_field "$1" status; }
lb_is() { [ "$(lb_status "$1")" = "$2" ]; }
lb_wait() { until_ok "$3" "HAProxy does not report w$1 $2 (it says '$(lb_status "$1")')" lb_is "$1" "$2"; }
# One column of HAProxy's CSV for a proxy and server (BACKEND for the backend's totals).
lb_stat() {
  curl -fsS --max-time 2 "$lb_stats/stats;csv" |
    awk -F, -v p="$1" -v s="$2" -v f="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == f || $i == "# " f) c = i; next } $1 == p && $2 == s { print $c + 0 }'
}

# All of it, in order, each piece answering before the next starts.
cluster_start() {
  cluster_ports_free
  cluster_pg_start
  cluster_pgbouncer_start
  for n in 1 2 3; do replica_start "$n"; done
  cluster_haproxy_start
  for n in 1 2 3; do lb_wait "$n" UP 15; done
  cluster_prometheus_start
}

cluster_prometheus_start() {
  mkdir -p "$cdir/prometheus"
  prometheus --config.file="$cluster_conf/prometheus.yml" --storage.tsdb.path="$cdir/prometheus/data" \
    --web.listen-address=127.0.0.1:9090 >>"$cdir/prometheus/prometheus.log" 2>&1 &
  echo $! >"$cdir/prometheus/pid"
  until_ok 30 "Prometheus is not ready on $prom (log: $cdir/prometheus/prometheus.log)" curl -fsS "$prom/-/ready"
}

# Every weft process the deployment ran, for cluster_stop: a replica's
# pid changes with each upgrade, and an old one may still drain.
remember() { [ -z "$1" ] || echo "$1" >>"$cdir/weft.pids"; }

# Everything that runs, newest first; each wait bounded (then SIGKILL).
# Only what this deployment started: its pid, still running the program named.
stop_pid() {
  [ -n "$1" ] && alive "$1" || return 0
  case $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) in
    *"$2"*) ;;
    *) return 0 ;;
  esac
  kill -TERM "$1" 2>/dev/null || true
  wait_gone "$1" 150
  kill -KILL "$1" 2>/dev/null || true
}
# wait_gone PID TENTHS: until PID has exited, at most TENTHS tenths of a second.
wait_gone() {
  i=0
  while alive "$1" && [ "$i" -lt "$2" ]; do
    sleep 0.1
    i=$((i + 1))
  done
}
cluster_stop() {
  stop_pid "$(cat "$cdir/prometheus/pid" 2>/dev/null)" prometheus
  stop_pid "$(cat "$cdir/haproxy/pid" 2>/dev/null)" haproxy
  for p in $(cat "$cdir/weft.pids" "$cdir"/w?/weft.pid 2>/dev/null | sort -u); do stop_pid "$p" "$cluster_conf/weft.conf"; done
  stop_pid "$(cat "$cdir/pgbouncer/pgbouncer.pid" 2>/dev/null)" pgbouncer
  "$src/packaging/pgdev.sh" stop "$pgdir" >/dev/null 2>&1 || true
}

# shellcheck shell=sh
# under-load.sh — sourced by packaging/check-systemd.sh: restarts and
# upgrades under wrk and hey, and what their output says (requests,
# failures, p99s and their ratios). Uses the script's $tmp, $http, $admin
# and its container helpers (packaging/lib/nspawn-exec.sh).
# packaging/check-cluster.sh uses only the readers of wrk's and hey's
# output and the ratios.

wrk_failures() { # wrk's output file: socket errors + non-2xx answers
  awk '/Socket errors:/ { gsub(",", ""); n += $4 + $6 + $8 + $10 } /Non-2xx/ { n += $NF } END { print n + 0 }' "$1"
}
wrk_requests() { awk '/requests in/ { print $1 }' "$1"; }
wrk_p99() { awk '$1 == "99%" { print $2 }' "$1"; }
# hey's output file: its requests; answers other than 200 and errors
# (connection refused, ...); its p99 (0.0123 secs as 0.0123secs).
hey_requests() {
  awk '/^Status code distribution/ { s = 1; next } /^[^ ]/ { s = 0 }
    s && /responses/ { gsub(/[][]/, ""); n += $2 } END { print n + 0 }' "$1"
}
hey_failures() {
  awk '/^Status code distribution/ { s = 1; next } /^Error distribution/ { e = 1; s = 0; next } /^[^ ]/ { s = 0; e = 0 }
    s && /responses/ { gsub(/[][]/, ""); if ($1 != 200) n += $2 } e && /\[[0-9]+\]/ { gsub(/[][]/, ""); n += $1 } END { print n + 0 }' "$1"
}
hey_p99() { awk '$1 == "99%%" || $1 == "99%" { print $3 $4 }' "$1"; }
# cnet_client NAME OUT CMD... — the load generator CMD in the container's
# network, in the background, its output in OUT; sets client_job (the
# background job) and client_pid (the command's own pid, whatever nsenter
# forks: SIGINT makes wrk and hey print their figures).
cnet_client() {
  name=$1 out=$2
  shift 2
  rm -f "$tmp/$name.pid"
  # shellcheck disable=SC2016 # the inner shell's own $$ and $1
  cnet sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$tmp/$name.pid" "$@" >"$out" 2>&1 &
  client_job=$!
  i=0
  while [ ! -s "$tmp/$name.pid" ]; do
    [ "$i" -lt 50 ] || fail "$name did not start"
    sleep 0.1
    i=$((i + 1))
  done
  client_pid=$(cat "$tmp/$name.pid")
}
# Runs wrk -c50 on /hello during $1 restarts (`systemctl restart weft`, or
# the shell command $2 inside, each waited for until it returns and checked
# to have replaced the process); sets $refused (TCP connection
# attempts that failed in the container's network: refused connects) and
# $failures (wrk's socket errors and non-2xx answers), $requests.
restarts_under_load() {
  # shellcheck disable=SC2016 # awk's own $
  snmp() { cnet awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "AttemptFails") c = i; h = 1 } else print $c }' /proc/net/snmp; }
  a0=$(snmp)
  cnet_client wrk "$tmp/wrk-restart.txt" wrk -t2 -c50 -d120s --timeout 5s --latency "$http/hello"
  wrk_job=$client_job wrk_pid=$client_pid
  # The second client: hey, a new connection for every request (what
  # wrk's kept-alive connections do not show: connects during the gap).
  cnet_client hey "$tmp/hey-restart.txt" hey -z 120s -c 10 -t 5 -disable-keepalive "$http/hello"
  hey_job=$client_job hey_pid=$client_pid
  # Load first: the server has answered requests of this wrk run.
  r0=$(cin curl -fsS "$admin/metrics" | awk '/^weft_requests_total/ { n += $2 } END { print n + 0 }')
  i=0
  until [ "$(cin curl -fsS "$admin/metrics" | awk '/^weft_requests_total/ { n += $2 } END { print n + 0 }')" -gt "$((r0 + 1000))" ]; do
    [ "$i" -lt 50 ] || fail "wrk's load does not reach weft"
    sleep 0.2
    i=$((i + 1))
  done
  n=0
  t0=$(date +%s%N)
  while [ "$n" -lt "$1" ]; do
    prev=$(unit_prop MainPID)
    # Ten restarts in a few seconds pass systemd's default start limit (5
    # in 10 s); reset-failed resets its counter, which is all it does here.
    cin systemctl reset-failed weft
    csh "${2:-systemctl restart weft}" >>"$tmp/restart.log" 2>&1 ||
      { tail -n 20 "$tmp/restart.log" >&2; journal_tail; fail "${2:-systemctl restart weft} failed (restart $((n + 1)))"; }
    # MAINPID= from a hand-over reaches systemd a moment after the command returns.
    i=0
    while [ "$(unit_prop MainPID)" = "$prev" ]; do
      [ "$i" -lt 50 ] || fail "restart $((n + 1)) did not replace the process"
      sleep 0.1
      i=$((i + 1))
    done
    n=$((n + 1))
  done
  # $3 seconds more of load (the steady state's window)
  [ -z "${3:-}" ] || sleep "$3"
  t1=$(date +%s%N)
  # SIGINT makes both print their figures.
  kill -INT "$wrk_pid" "$hey_pid" 2>/dev/null || true
  i=0
  while { kill -0 "$wrk_pid" || kill -0 "$hey_pid"; } 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$wrk_pid" "$hey_pid" 2>/dev/null || true
  wait "$wrk_job" 2>/dev/null || true
  wait "$hey_job" 2>/dev/null || true
  wrk_pid=""
  hey_pid=""
  refused=$(($(snmp) - a0))
  failures=$(wrk_failures "$tmp/wrk-restart.txt")
  requests=$(wrk_requests "$tmp/wrk-restart.txt")
  p99=$(wrk_p99 "$tmp/wrk-restart.txt")
  restart_ms=$(((t1 - t0) / 1000000 / ($1 > 0 ? $1 : 1)))
  cat "$tmp/wrk-restart.txt" "$tmp/hey-restart.txt" >&2
  [ -n "$requests" ] || fail "wrk printed no figures"
  grep -q 'Status code distribution' "$tmp/hey-restart.txt" || fail "hey printed no figures"
  hey_requests=$(hey_requests "$tmp/hey-restart.txt")
  hey_failures=$(hey_failures "$tmp/hey-restart.txt")
  hey_p99=$(hey_p99 "$tmp/hey-restart.txt")
  failures=$((failures + hey_failures))
  note "${2:-systemctl restart weft} x $1 under wrk -t2 -c50 (keep-alive) and hey -c10 (a connection per request) on /hello: wrk $requests requests, hey $hey_requests, $refused refused connection(s), $failures failed request(s) (hey's $hey_failures), wrk p99 $p99, hey p99 $hey_p99, $restart_ms ms per command"
}
# p99 $1 against the steady state's $2 (wrk's 12.3ms or hey's 0.0123secs), as a ratio with two decimals.
ratio() {
  awk -v a="$(to_us "$1")" -v b="$(to_us "$2")" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "?" }'
}
to_us() {
  awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "ms") n *= 1000; else if (u == "s" || u == "secs") n *= 1000000; else if (u == "m") n *= 60000000
    printf "%d\n", n + 0.5 }'
}

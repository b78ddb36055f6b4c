# shellcheck shell=sh
# nspawn-exec.sh — sourced by packaging/check-systemd.sh: booting its root
# with systemd-nspawn and working inside the booted container (commands as
# root in systemd's clean environment, curl, the unit's properties, the
# journal since a mark, the config's routes, docs/INSTALL.md's commands as
# a reader types them: doc_commands from packaging/lib/install-md.sh). Reads
# and sets the script's globals: $root, $tmp, $unified, $nspawn_pid, $pid1,
# $conf; fail and note are the script's.

start_nspawn() {
  env ${unified:+SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=$unified} \
    systemd-nspawn -q -b -D "$root" -M weft-ci --register=no --keep-unit --console=passive --private-network \
    </dev/null >>"$tmp/nspawn.log" 2>&1 &
  nspawn_pid=$!
}
# Inside the container, as root, with systemd's clean environment.
cin() {
  timeout "${CIN_TIMEOUT:-120}" nsenter -t "$pid1" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive TERM=dumb "$@"
}
csh() { cin sh -c "$1"; }
# A host tool in the container's network.
cnet() { nsenter -t "$pid1" -n "$@"; }
# Finds the container's PID 1 (not $1, the one before a reboot) and waits
# until it says 'running' (or 'degraded', with the failed units noted);
# sets $pid1.
await_up() {
  pid1=""
  # The first child of systemd-nspawn is a short-lived helper; PID 1 is the
  # child whose command is systemd.
  i=0
  while [ -z "$pid1" ]; do
    pid1=$(pgrep -P "$nspawn_pid" -x systemd | grep -vx "${1:-0}" || true)
    kill -0 "$nspawn_pid" 2>/dev/null || { cat "$tmp/nspawn.log" >&2; fail "systemd-nspawn exited (log above)"; }
    [ "$i" -lt 300 ] || fail "no systemd under systemd-nspawn $nspawn_pid within 30 s"
    [ -n "$pid1" ] || sleep 0.1
    i=$((i + 1))
  done
  # Right after its exec, systemd has no bus socket yet: poll until it
  # answers ("Failed to connect to bus" in 252, "Failed to connect to system
  # scope bus via local transport" in 257).
  i=0
  while :; do
    state=$(CIN_TIMEOUT=60 cin systemctl is-system-running --wait 2>&1 || true)
    case $state in *"Failed to connect to"*bus*) ;; *) break ;; esac
    [ "$i" -lt 100 ] || break
    sleep 0.2
    i=$((i + 1))
  done
  case $state in
    running) ;;
    degraded) note "the container is degraded: $(cin systemctl --failed --no-legend --plain | tr '\n' ' ')" ;;
    *) cat "$tmp/nspawn.log" >&2; fail "the container's systemd says '$state' (not running within 60 s)" ;;
  esac
}
get() { # url: sets $code and $body (curl inside the container)
  code=$(cin curl -sS -o /tmp/check.body -w '%{http_code}' --max-time 10 "$1" 2>"$tmp/curl.err") ||
    code="000 ($(cat "$tmp/curl.err"))"
  body=$(cin cat /tmp/check.body 2>/dev/null || true)
}
expect() { # url, status, text the body must contain
  get "$1"
  [ "$code" = "$2" ] || fail "GET $1: status $code, expected $2; body: $(echo "$body" | head -c 300)"
  case $body in
    *"$3"*) ;;
    *) fail "GET $1: body '$(echo "$body" | head -c 300)' lacks '$3'" ;;
  esac
}
journal_tail() { cin journalctl -u weft -b --no-pager -n 30 >&2 || true; }
# Polls until url answers status with text, for up to 20 s.
eventually() {
  weft_eventually "$1" "$2" "$3" 100 0.2 || {
    journal_tail
    fail "GET $1 never answered $2 with '$3' (last: $code '$(echo "$body" | head -c 200)')"
  }
}
# The journal's weft lines since mark $1 with their priorities (0..7), for a failure's report.
journal_prio() {
  # shellcheck disable=SC2016 # journalctl's own field names
  cin journalctl -u weft --no-pager -q --since="$1" -o json --output-fields=PRIORITY,MESSAGE |
    sed -n 's/.*"PRIORITY":"\([0-7]\)".*"MESSAGE":"\(.*\)".*/<\1> \2/p; s/.*"MESSAGE":"\(.*\)".*"PRIORITY":"\([0-7]\)".*/<\2> \1/p' >&2 || true
}
unit_prop() { cin systemctl show -P "$1" "${2:-weft.service}"; }
# The journal from here on: a mark (now, to the microsecond: the container
# shares this clock), then `since MARK` for weft's lines after it. Not a
# cursor: systemd 252's `journalctl --after-cursor=C` with matches (-u, -p)
# skips the first matching entry after C when C's own entry does not match,
# which hid the first err line of every burst (the FILE:LINE reason). A
# time works the same in 252 and 257, so both releases read it so.
cursor() { date +@%s.%6N; }
since() { # mark, extra journalctl arguments...
  c=$1
  shift
  cin journalctl -u weft --no-pager -q -o cat --since="$c" "$@" || true
}
# Waits until the unit's ActiveState is one of the words in $1, for up to $2 s.
await_state() {
  i=0
  while :; do
    s=$(unit_prop ActiveState "${3:-weft.service}")
    case " $1 " in *" $s "*) return 0 ;; esac
    [ "$i" -lt "$(($2 * 5))" ] || { journal_tail; fail "${3:-weft.service} is '$s', not '$1', after $2 s"; }
    sleep 0.2
    i=$((i + 1))
  done
}
# Write, then rename, as INSTALL.md §6 does.
put() { # file inside, mode, content on stdin
  cin sh -c "cat > '$1.check-new' && chmod $2 '$1.check-new' && mv -f '$1.check-new' '$1'"
}
add_route() { # a route line, inserted first in the routes list of $conf
  csh "sed '/^routes = (/a\\
  $1,' $conf > $conf.check-new && mv $conf.check-new $conf" || fail "could not edit $conf"
  cin grep -qF "$1" "$conf" || fail "could not add a route: $conf has no line 'routes = ('"
}
# docs/INSTALL.md's commands (packaging/lib/install-md.sh) run inside.
doc_exec() { csh "cd $1 && $2"; }
doc_where=" inside the container"

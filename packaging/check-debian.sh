#!/bin/sh
# check-debian.sh — the Debian packaging, checked the way an operator uses it.
#
# In a scratch copy of the source tree it builds the packages
# (dpkg-buildpackage -b -us -uc) and runs lintian on them (no errors, no
# warnings). Then, on this machine, it installs them with apt-get, sets up
# the system PostgreSQL cluster with weft-setup-db (twice: it must be
# idempotent), starts /usr/sbin/weft exactly as the unit's ExecStartPre and
# ExecStart do (as user weft, clean environment, RUNTIME_DIRECTORY, a
# notify socket and a watchdog, since there is no running systemd here), and
# checks: the endpoints answer (/hello, health, the persons API, the admin's
# /status and /metrics); an edit to /etc/weft/weft.conf is applied by the
# unit's ExecReload and by `weft reload`; a plugin built out of tree with
# weft-dev and pkg-config and renamed into /usr/local/lib/weft/plugins is
# served, and replacing it swaps it live; `weft new-plugin` projects build;
# weft reports READY, RELOADING, WATCHDOG and STOPPING; `systemd-analyze
# verify` accepts the unit; SIGTERM stops it with status 0; `apt-get purge`
# leaves nothing behind. It prints PASS or FAIL for each step and a summary.
#
# docs/INSTALL.md is the script where it can be: the commands of its ```sh
# blocks are run as written (doc_run, packaging/lib/install-md.sh) — §2's install, §3's
# database set-up, §4's and §5's checks, §6's drop-in of a plugin with its
# routes file, §8's removal and purge — and the checks around them are this
# script's. Only what needs a running systemd (systemctl, journalctl,
# sudoedit) is done here the way the unit does it instead. A doc change that
# breaks one of those commands fails this check.
#
# It needs root (it installs packages and starts the system cluster) and
# ports 8080 and 9901 free. Whatever it creates — the packages, the user, the
# database and role, a cluster it created or started, the scratch tree — is
# removed on exit, failed or not. It refuses to run where weft is installed
# already, since it ends by purging it. Exit status: 0 if every check passed.
# What only a running systemd shows (the unit's sandbox, the journal,
# restarts, weft.socket, Restart=, the maintainer scripts' systemctl calls)
# is proven by packaging/check-systemd.sh on the same packages
# (WEFT_DEBS_OUT=DIR: this script copies the .debs it built there).
set -eu

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "check-debian.sh: run it as root" >&2; exit 1; }
  exec sudo -- env WEFT_DEBS_OUT="${WEFT_DEBS_OUT:-}" "$0" "$@"
fi

root=$(cd "$(dirname "$0")/.." && pwd -P)
. "$root/packaging/lib/poll.sh"
. "$root/packaging/lib/install-md.sh"
# A caller's database or plugin settings (packaging/test.sh exports its
# private cluster's) must not reach the installed system's tools.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGSERVICEFILE PGOPTIONS PGPASSFILE PGPASSWORD \
  WEFT_PLUGIN_PATH PORT NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID RUNTIME_DIRECTORY 2>/dev/null || true
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -y -q -o DPkg::Lock::Timeout=600 "$@"; }
# INSTALL.md's own `apt-get install` lines must not stop at a prompt.
apt_conf=$(mktemp /tmp/weft-check-apt.XXXXXX)
printf 'APT::Get::Assume-Yes "true";\nDPkg::Lock::Timeout "600";\n' >"$apt_conf"
export APT_CONFIG="$apt_conf"
# The guide writes `sudo`; a root shell without it runs the commands bare
# (as INSTALL.md says), and `sudo -u USER` is runuser.
if ! command -v sudo >/dev/null 2>&1; then
  sudo() {
    if [ "$1" = -u ]; then
      u=$2
      shift 2
      runuser -u "$u" -- "$@"
    else
      "$@"
    fi
  }
fi

conf=/etc/weft/weft.conf
unit=/lib/systemd/system/weft.service
dropdir=/usr/local/lib/weft/plugins
http=http://127.0.0.1:8080
admin=http://127.0.0.1:9901

# ---- results and cleanup ------------------------------------------------

me=check-debian.sh
. "$root/packaging/lib/steps.sh"

tmp=""
weft_pid=""
notify_pid=""
installed=0
cluster=""
cluster_created=0
cluster_started=0
db_created=0
role_created=0
run_created=0
dropin_file=""
local_existed=1

# Runs as postgres, from / (postgres cannot read every working directory).
pg_psql() { (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 "$@"); }
pg_query() { pg_psql -d "${2:-postgres}" -tA -c "$1"; }

stop_pid() { # pid, seconds: TERM, then KILL; collects the exit status
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  i=0
  while [ "$i" -lt "$(($2 * 10))" ] && alive "$1"; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
# Alive and not a zombie waiting for us to collect it.
alive() {
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
  [ -n "$st" ] && [ "$st" != Z ]
}

cleanup() {
  rc=$?
  set +e
  trap - EXIT INT TERM
  if [ -n "$weft_pid" ]; then
    note "cleanup: stopping weft (pid $weft_pid)"
    stop_pid "$weft_pid" 15
  fi
  [ -n "$notify_pid" ] && stop_pid "$notify_pid" 2
  [ -n "$dropin_file" ] && rm -f "$dropin_file" "$dropdir"/.dropin.so.new
  rm -f "$dropdir"/myplugin.so "$dropdir"/myplugin.routes "$dropdir"/.myplugin.so.new "$dropdir"/.myplugin.routes.new
  if [ "$installed" -eq 1 ]; then
    note "cleanup: purging weft and weft-dev"
    apt_get purge weft weft-dev >/dev/null 2>&1
  fi
  [ "$local_existed" -eq 0 ] && rmdir "$dropdir" /usr/local/lib/weft 2>/dev/null
  [ "$run_created" -eq 1 ] && rm -rf /run/weft
  if [ -n "$cluster" ]; then
    if [ "$db_created" -eq 1 ]; then
      note "cleanup: dropping database weft"
      pg_psql -d postgres -c "DROP DATABASE IF EXISTS weft WITH (FORCE)"
    fi
    if [ "$role_created" -eq 1 ]; then
      note "cleanup: dropping role weft"
      pg_psql -d postgres -c "DROP ROLE IF EXISTS weft"
    fi
    if [ "$cluster_created" -eq 1 ]; then
      note "cleanup: dropping the cluster $cluster it created"
      pg_dropcluster --stop "$pgver" main
    elif [ "$cluster_started" -eq 1 ]; then
      note "cleanup: stopping the cluster $cluster it started"
      pg_ctlcluster "$pgver" main stop
    fi
  fi
  [ -n "$tmp" ] && rm -rf "$tmp"
  rm -f "$apt_conf"
  echo "" >&2
  echo "check-debian.sh summary:$results" >&2
  if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
    echo "PASS: the Debian packages build, lint clean, install, serve, reload, take a drop-in plugin and purge cleanly" >&2
  else
    echo "  FAIL  ${failed:-$current (exit status $rc)}" >&2
    echo "FAIL: check-debian.sh" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'failed="${current:-start}: interrupted"; exit 130' INT TERM

# ---- preconditions ---------------------------------------------------------

step "preconditions: build and check dependencies, a machine without weft, free ports"
# The build's packages come from install-deps.sh (this release's names), so the list is written once.
deps="$("$root/packaging/install-deps.sh" --list build) dpkg-dev debhelper lintian fakeroot postgresql systemd curl iproute2 man-db adduser"
missing=""
for p in $deps; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  note "installing:$missing"
  apt_get update >/dev/null
  # shellcheck disable=SC2086 # a list of package names
  apt_get install --no-install-recommends $missing >/dev/null || fail "apt-get install$missing failed"
fi
for p in weft weft-dev; do
  s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  case $s in
    "" | not-installed) ;;
    *) fail "package $p is $s on this machine; this check installs and finally purges it, so remove it first (apt-get purge $p)" ;;
  esac
done
if getent passwd weft >/dev/null; then
  note "a user weft exists without the package (left by an interrupted run?); the purge at the end removes it"
fi
busy=$(ss -Htln '( sport = :8080 or sport = :9901 )' 2>/dev/null || true)
[ -z "$busy" ] || fail "ports 8080 and 9901 (the packaged config's listener and admin) must be free; in use:
$busy"
[ -e /usr/local/lib/weft ] || local_existed=0
pass

tmp=$(mktemp -d /tmp/weft-check-debian.XXXXXX)
# weft (as user weft) must reach the notify socket under it; names stay unlisted.
chmod 0711 "$tmp"

# ---- docs/INSTALL.md, as written ---------------------------------------------

install_md=$root/docs/INSTALL.md
# docs/INSTALL.md's commands (packaging/lib/install-md.sh) run in this
# shell, so the sudo stand-in applies; systemd's are left to this script.
doc_exec() { (cd "$1" && eval "$2"); }
doc_commands "## 2." | grep -q . || fail "docs/INSTALL.md: no sh commands under '## 2.' (is the guide's layout changed?)"

# ---- build -------------------------------------------------------------------

step "build the packages with dpkg-buildpackage -b -us -uc in a scratch copy"
mkdir "$tmp/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # What git tracks or would track: no build trees, no .git; files deleted
  # in the work tree are skipped.
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$tmp/src"
else
  (cd "$root" && tar --exclude='./build*' --exclude=./.weft --exclude='./obj-*' --exclude=./.git -cf - .) |
    tar -xf - -C "$tmp/src"
fi
[ -f "$tmp/src/debian/control" ] || fail "no debian/control in the copied tree"
if ! (cd "$tmp/src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1; then
  tail -n 60 "$tmp/build.log" >&2
  fail "dpkg-buildpackage failed (last lines above)"
fi
ver=$(cd "$tmp/src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb=weft_${ver}_${arch}.deb
devdeb=weft-dev_${ver}_${arch}.deb
changes=$tmp/weft_${ver}_${arch}.changes
for f in "$deb" "$devdeb"; do
  [ -f "$tmp/$f" ] || fail "dpkg-buildpackage did not produce $f"
done
[ -f "$changes" ] || fail "dpkg-buildpackage did not produce $(basename "$changes")"
# packaging/test.sh hands them on to packaging/check-systemd.sh.
if [ -n "${WEFT_DEBS_OUT:-}" ]; then
  cp "$tmp/$deb" "$tmp/$devdeb" "$WEFT_DEBS_OUT/" || fail "cannot copy the packages to WEFT_DEBS_OUT=$WEFT_DEBS_OUT"
fi
pass

step "lintian --fail-on error,warning on the .changes and its .debs"
if lintian --fail-on error,warning --display-info "$changes" >"$tmp/lintian.log" 2>&1; then
  lint_ok=1
else
  lint_ok=0
fi
# lintian's advice against running as root is not about the packages.
grep -v 'running with root privileges is not recommended' "$tmp/lintian.log" >&2 || true
[ "$lint_ok" -eq 1 ] || fail "lintian reports errors or warnings (above)"
pass

# ---- install -----------------------------------------------------------------

step "INSTALL.md §2, as written: apt-get install the .debs ($deb, $devdeb)"
installed=1
doc_commands "## 2." | grep -qF "./$deb" || fail "docs/INSTALL.md §2 does not install ./$deb (the version or architecture changed?)"
doc_run "## 2." "$tmp/src"
pass

step "installed layout: user, directories, conffile, unit, man pages, plugins"
pw=$(getent passwd weft) || fail "no user weft"
case $pw in
  *:/var/lib/weft:/usr/sbin/nologin) ;;
  *) fail "user weft should have home /var/lib/weft and shell /usr/sbin/nologin: $pw" ;;
esac
getent group weft >/dev/null || fail "no group weft"
for d in /var/lib/weft /var/log/weft; do
  [ "$(stat -c '%U:%G %a' "$d" 2>/dev/null)" = "weft:weft 750" ] || fail "$d should be weft:weft 0750: $(stat -c '%U:%G %a' "$d" 2>&1)"
done
[ "$(stat -c '%U:%G %a' "$dropdir" 2>/dev/null)" = "root:root 755" ] ||
  fail "$dropdir should be root:root 0755: $(stat -c '%U:%G %a' "$dropdir" 2>&1)"
dpkg-query -W -f='${Conffiles}\n' weft | grep -q " $conf " || fail "$conf is not a conffile of weft"
[ -d /etc/weft/routes.d ] || fail "no /etc/weft/routes.d (the route fragments' drop-in directory)"
[ -f "$unit" ] || fail "no $unit"
[ ! -e /etc/systemd/system/multi-user.target.wants/weft.service ] || fail "the unit should not be enabled on install"
plugdir=/usr/lib/$multiarch/weft/plugins
for p in hello cpu delay locked; do
  [ -f "$plugdir/$p.so" ] || fail "no $plugdir/$p.so"
done
has_persons=0
[ -f "$plugdir/persons.so" ] && has_persons=1
grep -q "\"$plugdir\"" "$conf" || fail "$conf does not search $plugdir"
grep -q "\"$dropdir\"" "$conf" || fail "$conf does not search $dropdir"
/usr/sbin/weft --version | grep -q "^weft ${ver%%-*} " || fail "weft --version: $(/usr/sbin/weft --version 2>&1)"
for m in weft weft-setup-db; do
  man -w "$m" >/dev/null 2>&1 || fail "no man page $m(8)"
done
[ -x /usr/sbin/weft-setup-db ] || fail "no /usr/sbin/weft-setup-db"
# Paths compiled into the binary must be the installed ones.
! grep -q "$tmp/src" /usr/sbin/weft || fail "/usr/sbin/weft refers to the build tree $tmp/src"
ls /usr/share/weft/sql/*.sql >/dev/null 2>&1 || fail "no /usr/share/weft/sql/*.sql"
pass

step "reinstall: the maintainer scripts are idempotent"
if ! (cd "$tmp" && apt_get install --reinstall "./$deb") >"$tmp/reinstall.log" 2>&1; then
  tail -n 30 "$tmp/reinstall.log" >&2
  fail "apt-get install --reinstall failed"
fi
[ "$(getent passwd weft | cut -d: -f3)" = "$(echo "$pw" | cut -d: -f3)" ] || fail "the reinstall changed weft's uid"
pass

# ---- database ----------------------------------------------------------------

step "the system PostgreSQL cluster runs (created or started if needed)"
pgver=""
for b in /usr/lib/postgresql/*/bin/postgres; do
  [ -x "$b" ] || continue
  v=${b#/usr/lib/postgresql/}
  v=${v%%/*}
  if [ -z "$pgver" ] || [ "$v" -gt "$pgver" ]; then pgver=$v; fi
done
[ -n "$pgver" ] || fail "no PostgreSQL server in /usr/lib/postgresql"
line=$(pg_lsclusters -h 2>/dev/null | awk -v v="$pgver" '$1 == v && $2 == "main"')
if [ -z "$line" ]; then
  note "creating cluster $pgver main"
  pg_createcluster "$pgver" main >/dev/null || fail "pg_createcluster $pgver main failed"
  cluster_created=1
  line=$(pg_lsclusters -h | awk -v v="$pgver" '$1 == v && $2 == "main"')
fi
cluster="$pgver main"
port=$(echo "$line" | awk '{print $3}')
[ "$port" = 5432 ] || fail "cluster $cluster listens on port $port; the packaged conninfo (dbname=weft) expects the default 5432"
if [ "$(echo "$line" | awk '{print $4}')" != online ]; then
  note "starting cluster $cluster"
  cluster_started=1
  pg_ctlcluster "$pgver" main start || fail "pg_ctlcluster $pgver main start failed"
fi
pg_query "SELECT 1" >/dev/null || fail "cannot connect to cluster $cluster as postgres"
[ -n "$(pg_query "SELECT 1 FROM pg_roles WHERE rolname = 'weft'")" ] || role_created=1
[ -n "$(pg_query "SELECT 1 FROM pg_database WHERE datname = 'weft'")" ] || db_created=1
pass

step "INSTALL.md §3 as written (weft-setup-db), then weft-setup-db again: role, database, schema owned by weft, unchanged by the second run"
: >"$tmp/doc.log"
doc_run "## 3." "$tmp"
cat "$tmp/doc.log" >&2
[ "$(pg_query "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'weft'")" = t ] || fail "no login role weft"
[ "$(pg_query "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'weft'")" = weft ] ||
  fail "database weft is not owned by weft"
others=$(pg_query "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> 'weft'" weft)
[ "$others" = 0 ] || fail "$others table(s) in database weft are not owned by weft"
counts() {
  for t in $(pg_query "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1" weft); do
    printf '%s=%s ' "$t" "$(pg_query "SELECT count(*) FROM public.\"$t\"" weft)"
  done
}
before=$(counts)
/usr/sbin/weft-setup-db >"$tmp/setup2.log" 2>&1 || { cat "$tmp/setup2.log" >&2; fail "weft-setup-db failed the second time"; }
if ! grep -q 'role weft exists' "$tmp/setup2.log" || ! grep -q 'database weft exists' "$tmp/setup2.log"; then
  cat "$tmp/setup2.log" >&2
  fail "the second run did not find the role and database"
fi
after=$(counts)
[ "$before" = "$after" ] || fail "the second run changed the data: before '$before', after '$after'"
note "tables: $after"
pass

# ---- serve -------------------------------------------------------------------

# The unit's own commands and user, so the check follows any edit to it.
unit_value() { sed -n "s/^$1=//p" "$unit"; }
svc_user=$(unit_value User)
exec_pre=$(unit_value ExecStartPre)
exec_start=$(unit_value ExecStart)
[ "$svc_user" = weft ] || fail "the unit's User= is '$svc_user', not weft"

# systemd's environment for the service: nothing inherited; the directories
# it creates; HOME etc. from User=.
svc_env="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin HOME=/var/lib/weft USER=weft LOGNAME=weft
SHELL=/usr/sbin/nologin RUNTIME_DIRECTORY=/run/weft STATE_DIRECTORY=/var/lib/weft LOGS_DIRECTORY=/var/log/weft"
# As the unit runs its commands: user and group weft, no new privileges, no
# capabilities, from /. It execs, so call it in a subshell — ( as_service …)
# or as_service … & — and $! is then the command's own pid, as $MAINPID is.
as_service() { # extra environment assignments..., --, command...
  extra=""
  while [ "$1" != -- ]; do
    extra="$extra $1"
    shift
  done
  shift
  # shellcheck disable=SC2086 # word lists by design
  cd / && exec env -i $svc_env $extra setpriv --reuid=weft --regid=weft --init-groups --no-new-privs \
    --inh-caps=-all --bounding-set=-all -- "$@"
}

step "start weft as the unit does: ExecStartPre ($exec_pre), then ExecStart, as user weft"
# RuntimeDirectory=weft
if [ ! -d /run/weft ]; then
  run_created=1
fi
install -d -o weft -g weft -m 0755 /run/weft
# shellcheck disable=SC2086 # the unit's command line, split as systemd does (no quotes in it)
(as_service -- $exec_pre) >"$tmp/pre.log" 2>&1 || { cat "$tmp/pre.log" >&2; fail "ExecStartPre failed"; }
# What the main process itself will put into /run/weft is told apart from
# what the weft -t runs leave there.
run_entries() { for f in /run/weft/*; do if [ -e "$f" ]; then echo "$f"; fi; done; }
run_entries >"$tmp/run.before"
# A notify socket standing in for systemd's: every datagram, one line per field.
mkdir -m 0711 "$tmp/notify"
sock=$tmp/notify/sock
nlog=$tmp/notify.log
: >"$nlog"
perl -MIO::Socket::UNIX -MSocket -e '
  my ($path, $out) = @ARGV;
  my $s = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => $path) or die "notify socket $path: $!\n";
  chmod 0666, $path;
  open(my $fh, ">>", $out) or die "$out: $!\n";
  $fh->autoflush(1);
  while (1) { my $buf; defined($s->recv($buf, 65536)) or last; print $fh "$buf\n"; }
' "$sock" "$nlog" </dev/null >/dev/null 2>"$tmp/notify.err" &
notify_pid=$!
i=0
while [ ! -S "$sock" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$sock" ] || fail "the notify socket did not appear: $(cat "$tmp/notify.err")"
# WatchdogSec=30, as in the unit: weft pings every 7.5 s while its loops turn.
# shellcheck disable=SC2086
as_service NOTIFY_SOCKET="$sock" WATCHDOG_USEC=30000000 -- $exec_start </dev/null >"$tmp/weft.log" 2>&1 &
weft_pid=$!
started=$(date +%s)
i=0
until grep -q '^READY=1$' "$nlog" && curl -fsS -o /dev/null --max-time 2 "$http/hello" 2>/dev/null; do
  alive "$weft_pid" || { cat "$tmp/weft.log" >&2; fail "weft exited during start-up (log above)"; }
  [ "$i" -lt 300 ] || { cat "$tmp/weft.log" >&2; fail "weft did not report READY=1 and serve /hello within 30 s"; }
  sleep 0.1
  i=$((i + 1))
done
[ "$(cat /run/weft/weft.pid 2>/dev/null)" = "$weft_pid" ] || fail "/run/weft/weft.pid does not hold weft's pid $weft_pid"
run_entries | grep -vxF -f "$tmp/run.before" >"$tmp/run.main" || true
note "weft pid $weft_pid is ready: $(grep '^STATUS=' "$nlog" | tail -n 1)"
pass

get() { # url: sets $code and $body
  code=$(curl -sS -o "$tmp/body" -w '%{http_code}' --max-time 10 "$1" 2>"$tmp/curl.err") ||
    code="000 ($(cat "$tmp/curl.err"))"
  body=$(cat "$tmp/body" 2>/dev/null || true)
}
expect() { # url, status, text the body must contain
  get "$1"
  [ "$code" = "$2" ] || fail "GET $1: status $code, expected $2; body: $(echo "$body" | head -c 300)"
  case $body in
    *"$3"*) ;;
    *) fail "GET $1: body '$(echo "$body" | head -c 300)' lacks '$3'" ;;
  esac
}
# Polls until url answers status with text, for up to 15 s.
weft_alive_or_fail() { alive "$weft_pid" || { tail -n 30 "$tmp/weft.log" >&2; fail "weft died (log above)"; }; }
eventually() {
  weft_eventually "$1" "$2" "$3" 150 0.1 weft_alive_or_fail || {
    tail -n 30 "$tmp/weft.log" >&2
    fail "GET $1 never answered $2 with '$3' (last: $code '$(echo "$body" | head -c 200)')"
  }
}

step "the endpoints answer: /hello, /health/ready, the admin's /status and /metrics$([ "$has_persons" -eq 1 ] && echo ", /{pool,coroutine,reactive}/persons/1")"
expect "$http/hello" 200 hello
expect "$http/health/live" 200 ""
# Ready includes the database, which weft-setup-db prepared.
expect "$http/health/ready" 200 ""
expect "$admin/status" 200 "{"
expect "$admin/metrics" 200 "weft_"
if [ "$has_persons" -eq 1 ]; then
  name=$(pg_query "SELECT name FROM person WHERE id = 1" weft)
  [ -n "$name" ] || fail "the seed data has no person 1"
  for p in pool coroutine reactive; do
    expect "$http/$p/persons/1" 200 "\"$name\""
  done
  expect "$http/coroutine/persons/999999999" 404 ""
else
  note "no persons plugin in the package: the database routes are not checked"
fi
pass

step "INSTALL.md §4's checks as written (systemctl is this script's unit emulation)"
if [ "$has_persons" -eq 1 ]; then doc_run "## 4." "$tmp" 'systemctl'; else doc_run "## 4." "$tmp" 'systemctl|persons'; fi
pass

add_route() { # a route line, inserted first in the routes list (write, then rename)
  sed "/^routes = (/a\\
  $1," "$conf" >"$conf.check-new"
  mv "$conf.check-new" "$conf"
  grep -qF "$1" "$conf" || fail "could not add a route: $conf has no line 'routes = ('"
}
count() { grep -c "^$1\$" "$nlog" || true; }

step "edit $conf, then the unit's ExecReload (weft -t, kill -HUP \$MAINPID, as weft): the new route serves"
expect "$http/check/hello" 404 ""
ready0=$(count READY=1)
reloading0=$(count RELOADING=1)
add_route '{ path = "/check/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; options = { greeting = "edited and reloaded"; }; }'
unit_value ExecReload | while read -r cmd; do
  # shellcheck disable=SC2046 # the unit's command line, $MAINPID as systemd expands it
  (as_service -- $(echo "$cmd" | sed "s/\$MAINPID/$weft_pid/")) </dev/null >>"$tmp/reload.log" 2>&1 ||
    { cat "$tmp/reload.log" >&2; echo "ExecReload=$cmd failed" >"$tmp/reload.failed"; }
done
[ ! -e "$tmp/reload.failed" ] || fail "$(cat "$tmp/reload.failed")"
eventually "$http/check/hello" 200 "edited and reloaded"
expect "$http/hello" 200 hello
# §5 as written, but for the editor and systemctl (done above as the unit does).
doc_run "## 5." "$tmp" 'sudoedit|systemctl'
grep -q '"generation": 2' "$tmp/doc.log" || fail "INSTALL.md §5's /status does not show the reloaded generation 2"
i=0
until [ "$(count RELOADING=1)" -gt "$reloading0" ] && [ "$(count READY=1)" -gt "$ready0" ]; do
  [ "$i" -lt 50 ] || fail "weft did not report RELOADING=1 then READY=1 around the reload"
  sleep 0.1
  i=$((i + 1))
done
pass

step "a plugin built out of tree with weft-dev and pkg-config, renamed into $dropdir and routed, is served"
pkg-config --exists weft-plugin || fail "pkg-config does not know weft-plugin"
[ "$(pkg-config --modversion weft-plugin)" = "${ver%%-*}" ] || fail "weft-plugin.pc has version $(pkg-config --modversion weft-plugin)"
ex=/usr/share/doc/weft-dev/examples/hello/hello.c
mkdir "$tmp/dropin"
if [ -f "$ex" ]; then cat "$ex"; elif [ -f "$ex.gz" ]; then zcat "$ex.gz"; else fail "no $ex"; fi >"$tmp/dropin/hello.c"
make_dropin() { # greeting
  sed -e 's/\.name = "hello"/.name = "dropin"/' -e "s/\"greeting\", \"hello\"/\"greeting\", \"$1\"/" \
    "$tmp/dropin/hello.c" >"$tmp/dropin/dropin.c"
  if ! grep -q '\.name = "dropin"' "$tmp/dropin/dropin.c" || ! grep -q "\"greeting\", \"$1\"" "$tmp/dropin/dropin.c"; then
    fail "the example no longer has the lines '.name = \"hello\"' and '\"greeting\", \"hello\"' this check renames"
  fi
  # shellcheck disable=SC2046 # pkg-config's flags
  (cd "$tmp/dropin" && cc -shared -fPIC -Wall -Wextra -Werror $(pkg-config --cflags weft-plugin) dropin.c -o dropin.so) ||
    fail "the example does not build with cc -shared -fPIC \$(pkg-config --cflags weft-plugin)"
  dropin_file=$dropdir/dropin.so
  install -o root -g root -m 0644 "$tmp/dropin/dropin.so" "$dropdir/.dropin.so.new"
  mv -f "$dropdir/.dropin.so.new" "$dropin_file"
}
make_dropin "dropped in"
add_route '{ path = "/check/dropin"; plugin = "dropin"; dispatch = "coroutine"; methods = ["GET"]; }'
/usr/sbin/weft reload -c "$conf" >"$tmp/weft-reload.log" 2>&1 || { cat "$tmp/weft-reload.log" >&2; fail "weft reload -c $conf failed"; }
eventually "$http/check/dropin" 200 "dropped in"
expect "$http/check/hello" 200 "edited and reloaded"
pass

step "replacing the routed drop-in plugin (write, then rename) swaps it in without a reload"
make_dropin "swapped in"
eventually "$http/check/dropin" 200 "swapped in"
pass

step "INSTALL.md §6 as written: myplugin.so and myplugin.routes dropped in, /mine answers with no config edit or reload"
mkdir "$tmp/doc6"
chmod 0755 "$tmp/doc6"
# The reader's edit between cp and cc: the plugin's name must be its file's.
doc_run "## 6." "$tmp/doc6" "" '^cp ' "sed -i 's/\\.name = \"hello\"/.name = \"myplugin\"/' myplugin.c && grep -q '\\.name = \"myplugin\"' myplugin.c"
grep -q 'reload: route /mine added' "$tmp/weft.log" ||
  fail "weft did not log 'route /mine added' for the dropped-in routes file"
expect "$http/mine" 200 hello
# Removing the routes file removes the endpoint, the .so may then go.
rm -f "$dropdir/myplugin.routes"
eventually "$http/mine" 404 ""
rm -f "$dropdir/myplugin.so"
pass

step "weft new-plugin scaffolds a project that builds and passes its tests (make test) against the installed weft-dev"
mkdir "$tmp/scaffold"
(cd "$tmp" && /usr/sbin/weft new-plugin greeter "$tmp/scaffold") >"$tmp/scaffold.log" 2>&1 ||
  { cat "$tmp/scaffold.log" >&2; fail "weft new-plugin greeter failed"; }
make -C "$tmp/scaffold/greeter" >>"$tmp/scaffold.log" 2>&1 || { cat "$tmp/scaffold.log" >&2; fail "make failed"; }
[ -f "$tmp/scaffold/greeter/greeter.so" ] || fail "make built no greeter.so"
if grep -rn "$tmp/src" "$tmp/scaffold" >&2; then
  fail "the scaffold refers to the build tree (above)"
fi
# After that check: the test binary it builds links libweft-test, which may name source files.
pkg-config --exists weft-test || fail "pkg-config does not know weft-test"
make -C "$tmp/scaffold/greeter" test >>"$tmp/scaffold.log" 2>&1 ||
  { cat "$tmp/scaffold.log" >&2; fail "the scaffold's tests (make test, the installed test kit) failed"; }
grep -q "Passing: 2 | Failing: 0" "$tmp/scaffold.log" || { cat "$tmp/scaffold.log" >&2; fail "make test ran no 2 passing tests"; }
pass

step "systemd-analyze verify $unit"
if ! systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1; then
  cat "$tmp/verify.log" >&2
  fail "systemd-analyze verify rejects the unit"
fi
if [ -s "$tmp/verify.log" ]; then
  cat "$tmp/verify.log" >&2
  fail "systemd-analyze verify has complaints (above)"
fi
pass

step "the watchdog is fed while the loops turn (WATCHDOG=1 within the 30 s period)"
i=0
until grep -q '^WATCHDOG=1$' "$nlog"; do
  [ "$i" -lt 150 ] || fail "no WATCHDOG=1 from weft in $(($(date +%s) - started)) s; WatchdogSec=30 expects one every 15 s at most"
  sleep 0.1
  i=$((i + 1))
done
pass

step "SIGTERM stops weft gracefully: STOPPING=1, exit status 0, pid file and private plugin copies gone"
kill -TERM "$weft_pid"
i=0
while alive "$weft_pid"; do
  [ "$i" -lt 250 ] || fail "weft still runs 25 s after SIGTERM (the unit's TimeoutStopSec is 30)"
  sleep 0.1
  i=$((i + 1))
done
status=0
wait "$weft_pid" || status=$?
weft_pid=""
[ "$status" -eq 0 ] || { tail -n 20 "$tmp/weft.log" >&2; fail "weft exited with status $status"; }
grep -q '^STOPPING=1$' "$nlog" || fail "weft did not report STOPPING=1"
[ ! -e /run/weft/weft.pid ] || fail "/run/weft/weft.pid is left behind"
while read -r f; do
  [ ! -e "$f" ] || fail "weft left $f behind"
done <"$tmp/run.main"
for f in /run/weft/*; do
  [ -e "$f" ] || continue
  if [ ! -d "$f" ] || [ -n "$(ls -A "$f")" ]; then
    fail "$f is left behind"
  fi
  # Known: `weft -t` (ExecStartPre, ExecReload) leaves its empty private
  # plugin directory; systemd removes RuntimeDirectory when the unit stops.
  note "weft -t left an empty $f behind"
done
# Known server race (reported): the control thread's first watchdog check
# can run before a loop stores its first heartbeat, and then logs "event
# loop N has not turned for <the machine's uptime> ms". Only that form — an
# age longer than this weft has been running, so no real stall — is tolerated.
ran=$(($(date +%s) - started + 2))
grep -Ei 'error|refused' "$tmp/weft.log" | while read -r line; do
  ms=$(echo "$line" | sed -n 's/.*event loop [0-9]* has not turned for \([0-9]*\) ms.*/\1/p')
  if [ -n "$ms" ] && [ $((ms / 1000)) -gt "$ran" ]; then
    note "known start-up race, not a stuck loop: $line"
  else
    echo "$line"
  fi
done >"$tmp/errors.log"
if [ -s "$tmp/errors.log" ]; then
  cat "$tmp/errors.log" >&2
  fail "weft logged errors (above)"
fi
stop_pid "$notify_pid" 2
notify_pid=""
pass

# ---- purge -------------------------------------------------------------------

step "INSTALL.md §8 as written (remove, then purge) removes the packages, the config, state, logs and the user"
rm -f "$dropin_file"
dropin_file=""
: >"$tmp/doc.log"
doc_run "## 8." "$tmp" 'psql'
installed=0
for p in weft weft-dev; do
  s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ -z "$s" ] || [ "$s" = not-installed ] || fail "package $p is still $s"
done
! getent passwd weft >/dev/null || fail "the user weft is still there"
! getent group weft >/dev/null || fail "the group weft is still there"
for f in /etc/weft /usr/lib/"$multiarch"/weft /var/lib/weft /var/log/weft /usr/share/weft /usr/include/weft \
  /usr/share/pkgconfig/weft-plugin.pc /usr/lib/"$multiarch"/pkgconfig/weft-test.pc /usr/lib/"$multiarch"/libweft-test.a /usr/share/doc/weft /usr/share/doc/weft-dev "$unit" /usr/sbin/weft; do
  [ ! -e "$f" ] || fail "$f is still there after the purge"
done
left=$(ls -d /usr/lib/*/weft 2>/dev/null || true)
[ -z "$left" ] || fail "still there after the purge: $left"
if [ "$local_existed" -eq 0 ] && [ -e /usr/local/lib/weft ]; then
  fail "the empty /usr/local/lib/weft the package created is still there"
fi
pass

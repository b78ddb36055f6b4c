#!/bin/sh
# check-systemd.sh — weft's .debs under a real systemd: PID 1 of a Debian
# container booted with systemd-nspawn, driven the way an operator drives it.
# WEFT_SYSTEMD_SUITE names the release: bookworm (Debian 12, systemd 252; the
# default) or trixie (Debian 13, systemd 257). Everything else follows from
# it: the mirror's suite names, the .debs (built on that release), the
# root's packages (their Depends), and the versions the steps name
# (systemd's, PostgreSQL's), read from the booted container.
#
# It makes a root of that release once (mmdebstrap --variant=important with
# systemd, dbus, PostgreSQL, sudo, a compiler and the runtime dependencies of
# the built .debs, read from their Depends), cached under $WEFT_CI_CACHE
# (default /var/cache/weft-ci) and keyed by that package list, so a new
# dependency rebuilds it. Each run copies the cached root (cp -a, ~2.5 s),
# boots it in the background (systemd-nspawn -b --private-network), finds
# the container's PID 1 and drives it with nsenter: `nsenter -t PID -a CMD`
# runs CMD inside, `nsenter -t PID -n CMD` runs a host tool (wrk) in its
# network. Then it walks docs/INSTALL.md as written — §2 install, §3
# weft-setup-db, §4 enable --now and its checks, §5 edit and reload, §6 a
# plugin built with weft-dev and dropped in, §7 the journal, §8 remove and
# purge — and checks around it what only a real systemd shows: the unit's
# sandbox, directory modes kept 0750 at the first start, the FILE:LINE
# reasons at journal priority err (a broken reload, a refused drop-in, a
# crash's FATAL line) and in `systemctl status`, a broken reload, a truncated
# drop-in that does not block the next start, restarts under wrk -c50 with
# and without weft.socket (refused connections and failed requests counted:
# 0 and 0 with it), three upgrades to higher versions ($ver+ci1..3, the
# .debs repacked; postinst's `weft upgrade` hands the sockets to the new
# binary) and ten `weft upgrade`s under wrk -c50 and hey -c10 (0 refused,
# 0 failed, each p99 as a ratio to the steady state's; the unpacked plugins
# held, not swapped into the old process), an upgrade of a
# stopped weft, two reboots
# (`systemctl reboot` inside; systemd-nspawn exits 133 and the root is booted
# again): enabled units come back on their own with a broken drop-in on
# disk, disabled ones stay down; issue 26's defects 7 and 8 as an operator
# meets them (weft dev stopping its PostgreSQL on SIGTERM and SIGINT, PORT
# and ${VAR} from the unit's Environment=, a LoadCredential= token,
# log.format = json in the journal, the packaged logrotate file), a crash
# restarted by systemd and quarantined, a wedged loop aborted by weft before
# systemd's watchdog, a stop with requests in flight, and finally
# `systemctl poweroff`.
#
# Every check fails the stage, except one target the shared machine's load
# can miss: a p99 during an upgrade above twice the steady state's is
# reported as a TODO line (counted in the summary), not failed.
#
# The .debs: WEFT_DEBS_DIR=DIR names a directory holding weft_*.deb and
# weft-dev_*.deb built from this tree on that release (packaging/test.sh
# passes the ones packaging/check-debian.sh built for bookworm); without it
# they are built here: for bookworm with dpkg-buildpackage in a scratch copy
# on this (Debian 12) machine, for trixie inside the Debian 13 root by
# packaging/build-trixie-debs.sh (linted there too). It needs root, mmdebstrap,
# systemd-nspawn (systemd-container) and wrk, and the Debian mirror the first
# time (WEFT_CI_MIRROR, default http://deb.debian.org). Everything it starts
# is stopped on exit, failed or not: the container is powered off (killed if
# it does not go), its copy removed. Every wait has a deadline. With a cached
# root it takes 1.5 to 4 minutes. Exit status: 0 if every check passed.
set -eu

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "check-systemd.sh: run it as root" >&2; exit 1; }
  exec sudo -- env WEFT_DEBS_DIR="${WEFT_DEBS_DIR:-}" WEFT_CI_CACHE="${WEFT_CI_CACHE:-}" \
    WEFT_CI_MIRROR="${WEFT_CI_MIRROR:-}" WEFT_SYSTEMD_SUITE="${WEFT_SYSTEMD_SUITE:-}" "$0" "$@"
fi

src=$(cd "$(dirname "$0")/.." && pwd -P)
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
cache=${WEFT_CI_CACHE:-/var/cache/weft-ci}
mirror=${WEFT_CI_MIRROR:-http://deb.debian.org}
suite=${WEFT_SYSTEMD_SUITE:-bookworm}
# The container's cgroup hierarchy: systemd-nspawn gives it the host's
# (cgroup v1 on this sandbox) unless told otherwise. systemd 257 runs on v1
# only "tainted: cgroupsv1" (deprecated; removed after 257), and a Debian 13
# system boots unified: trixie's container gets the unified hierarchy
# (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1), bookworm's keeps the host's.
case $suite in
  bookworm) debian=12 unified="" ;;
  trixie) debian=13 unified=1 ;;
  *)
    echo "check-systemd.sh: WEFT_SYSTEMD_SUITE=$suite: it is bookworm (Debian 12, the default) or trixie (Debian 13)" >&2
    exit 2
    ;;
esac
# Read from the booted container (systemctl --version, /usr/lib/postgresql).
systemd_v=""
pg_major=""
started_at=$(date +%s)
. "$src/packaging/lib/clean-tree.sh"
. "$src/packaging/lib/deb-suite.sh"
. "$src/packaging/lib/poll.sh"
. "$src/packaging/lib/nspawn-exec.sh"
. "$src/packaging/lib/install-md.sh"
. "$src/packaging/lib/under-load.sh"

# ---- results and cleanup ------------------------------------------------------

me=check-systemd.sh
. "$src/packaging/lib/steps.sh"

tmp=""
nspawn_pid=""
pid1=""
wrk_pid=""
hey_pid=""

# Powers the container off (systemctl poweroff inside), waits up to $1 s for
# systemd-nspawn to exit, then kills it.
container_down() {
  [ -n "$nspawn_pid" ] || return 0
  if [ -n "$pid1" ] && kill -0 "$pid1" 2>/dev/null; then
    timeout 10 nsenter -t "$pid1" -a systemctl poweroff >/dev/null 2>&1 || true
  fi
  i=0
  while kill -0 "$nspawn_pid" 2>/dev/null && [ "$i" -lt "$(($1 * 10))" ]; do
    sleep 0.1
    i=$((i + 1))
  done
  if kill -0 "$nspawn_pid" 2>/dev/null; then
    note "cleanup: the container did not power off within $1 s; killing systemd-nspawn $nspawn_pid"
    kill -TERM "$nspawn_pid" 2>/dev/null || true
    sleep 1
    kill -KILL "$nspawn_pid" 2>/dev/null || true
    [ -z "$pid1" ] || kill -KILL "$pid1" 2>/dev/null || true
  fi
  wait "$nspawn_pid" 2>/dev/null || true
  nspawn_pid=""
  pid1=""
}

cleanup() {
  rc=$?
  set +e
  trap - EXIT INT TERM
  [ -z "$wrk_pid" ] || { kill -KILL "$wrk_pid" 2>/dev/null; wait "$wrk_pid" 2>/dev/null; }
  [ -z "$hey_pid" ] || kill -KILL "$hey_pid" 2>/dev/null
  if [ -n "$nspawn_pid" ]; then
    note "cleanup: powering the container off"
    container_down 30
  fi
  [ -n "$tmp" ] && rm -rf "$tmp"
  echo "" >&2
  echo "check-systemd.sh summary ($(($(date +%s) - started_at)) s):$results" >&2
  if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
    echo "PASS: weft's packages under a real systemd ${systemd_v:-?} in Debian $debian ($todos target(s) missed, marked TODO)" >&2
  else
    echo "  FAIL  ${failed:-$current (exit status $rc)}" >&2
    echo "FAIL: check-systemd.sh (Debian $debian)" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'failed="${current:-start}: interrupted"; exit 130' INT TERM

# ---- preconditions ------------------------------------------------------------

step "preconditions: mmdebstrap, systemd-nspawn, nsenter, wrk, hey"
missing=""
for p in mmdebstrap systemd-container wrk hey util-linux curl dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  note "installing:$missing"
  apt-get -y -q -o DPkg::Lock::Timeout=600 update >/dev/null
  # shellcheck disable=SC2086 # a list of package names
  apt-get -y -q -o DPkg::Lock::Timeout=600 install --no-install-recommends $missing >/dev/null ||
    fail "apt-get install$missing failed"
fi
tmp=$(mktemp -d /tmp/weft-check-systemd.XXXXXX)
pass

# README.md's short install path is the one a reader follows first: it must
# be made of docs/INSTALL.md's commands, which the walk below runs as written
# (its `systemctl enable --now weft` included), or it is untested.
install_md=$src/docs/INSTALL.md
step "README.md's install commands are docs/INSTALL.md's, which this stage runs"
untested=$(doc_untested_in "$src/README.md" "## Installing with apt")
[ -n "$(doc_commands "## Installing with apt" "$src/README.md")" ] || fail "README.md has no sh commands under '## Installing with apt'"
[ -z "$untested" ] || fail "README.md's install block has command(s) docs/INSTALL.md does not, so no stage runs them: $untested"
pass

# ---- the packages ---------------------------------------------------------------

if [ "$suite" = bookworm ]; then
  built_by="dpkg-buildpackage -b -us -uc in a scratch copy on this machine"
else
  built_by="packaging/build-trixie-debs.sh: dpkg-buildpackage and lintian inside the Debian 13 root"
fi
step "the .debs for Debian $debian: ${WEFT_DEBS_DIR:-built here by $built_by}"
debs=${WEFT_DEBS_DIR:-}
if [ -z "$debs" ]; then
  debs=$tmp/debs
  mkdir -p "$debs"
  if [ "$suite" = bookworm ]; then
    weft_clean_tree "$src" "$debs/src" || fail "cannot copy the source tree into $debs/src"
    # The build-time check (weft -t on the packaged config) is check-debian.sh's.
    if ! (cd "$debs/src" && DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" dpkg-buildpackage -b -us -uc) \
      >"$tmp/build.log" 2>&1; then
      tail -n 60 "$tmp/build.log" >&2
      fail "dpkg-buildpackage failed (last lines above)"
    fi
  else
    "$src/packaging/build-trixie-debs.sh" "$debs" >"$tmp/build.log" || {
      cat "$tmp/build.log" >&2
      fail "packaging/build-trixie-debs.sh could not build the packages (above)"
    }
    note "$(tail -n 1 "$tmp/build.log")"
  fi
fi
deb=""
devdeb=""
for f in "$debs"/weft_*.deb; do [ -f "$f" ] && deb=$f; done
for f in "$debs"/weft-dev_*.deb; do [ -f "$f" ] && devdeb=$f; done
if [ -z "$deb" ] || [ -z "$devdeb" ]; then fail "no weft_*.deb and weft-dev_*.deb in $debs"; fi
ver=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
note "packages: $(basename "$deb") $(basename "$devdeb")"
pass

step "the .debs of three later versions for the upgrades: $ver+ci1 … $ver+ci3, repacked"
# Same files, a higher Version (and any weft (= …) relation raised with
# it). Fast (dpkg-deb, no rebuild), and to dpkg and the maintainer
# scripts an upgrade like any other.
mkdir -p "$tmp/upgrades"
repack() { # .deb, version: writes PACKAGE_VERSION_ARCH.deb into $tmp/upgrades
  rm -rf "$tmp/repack"
  dpkg-deb -R "$1" "$tmp/repack" || fail "dpkg-deb -R $1 failed"
  sed -i -e "s/^Version: .*/Version: $2/" -e "s/(= $ver)/(= $2)/g" "$tmp/repack/DEBIAN/control"
  dpkg-deb -Zgzip -z1 --root-owner-group -b "$tmp/repack" "$tmp/upgrades/" >/dev/null || fail "dpkg-deb -b of $2 failed"
  rm -rf "$tmp/repack"
}
for k in 1 2 3; do
  repack "$deb" "$ver+ci$k"
  repack "$devdeb" "$ver+ci$k"
done
for p in weft weft-dev; do
  [ "$(dpkg-deb -f "$tmp/upgrades/${p}_$ver+ci3_$arch.deb" Version)" = "$ver+ci3" ] || fail "the repacked $p is not at $ver+ci3"
done
pass

# ---- the Debian root, cached --------------------------------------------------------

# What the root holds: systemd as PID 1, the database, sudo (INSTALL.md
# writes it), a compiler and pkg-config (INSTALL.md §6 builds a plugin),
# logrotate (the packaged /etc/logrotate.d/weft is run), and
# the runtime dependencies of both packages — the first alternative of each,
# without versions — so that `apt-get install ./x.deb` inside needs no mirror.
# (Debian 13's t64 libraries provide their old names on 64-bit
# architectures: apt takes libcurl4t64 for a first alternative libcurl4.)
deps_of() {
  dpkg-deb -f "$1" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' |
    grep -v -e '^$' -e '^weft'
}
pkgs=$({
  printf '%s\n' systemd systemd-sysv dbus postgresql sudo curl procps iproute2 build-essential pkgconf logrotate
  deps_of "$deb"
  deps_of "$devdeb"
} | sort -u | tr '\n' ' ')
sources="deb $mirror/debian $suite main
deb $mirror/debian $suite-updates main
deb $mirror/debian-security $suite-security main"
key=$(printf '%s\n%s\n%s\n' "root v1" "$pkgs" "$sources" | sha256sum | cut -c1-16)
# systemd-SUITE-KEY: check-trixie.sh owns trixie-* (and removes the others).
base=$cache/systemd-$suite-$key
step "a Debian $debian ($suite) root with systemd ($base)"
mkdir -p "$cache"
# Rebuilt when older than two weeks: security updates reach it that way.
if [ -d "$base" ] && [ -n "$(find "$base/.weft-ci-root" -mtime +14 2>/dev/null)" ]; then
  note "the cached root is more than 14 days old: rebuilding it"
  rm -rf "$base"
fi
if [ ! -f "$base/.weft-ci-root" ]; then
  # One builder at a time; a second run waits for it (up to 10 minutes).
  exec 9>"$cache/.systemd-$suite.lock"
  flock -w 600 9 || fail "another run holds $cache/.systemd-$suite.lock for more than 10 minutes"
  if [ ! -f "$base/.weft-ci-root" ]; then
    note "building it with mmdebstrap (about a minute): $pkgs"
    rm -rf "$base.new"
    # shellcheck disable=SC2086 # the source lines, one argument each
    if ! (IFS='
'
      timeout 900 mmdebstrap --variant=important --include="$(echo "$pkgs" | tr ' ' ',' | sed 's/,$//')" \
        "$suite" "$base.new" $sources) >"$tmp/mmdebstrap.log" 2>&1; then
      tail -n 30 "$tmp/mmdebstrap.log" >&2
      weft_deb_suite_hint "$tmp/mmdebstrap.log" "$deb" "$suite" "${WEFT_DEBS_DIR:-}" >&2
      rm -rf "$base.new"
      fail "mmdebstrap failed (last lines above)"
    fi
    echo "$pkgs" >"$base.new/.weft-ci-root"
    mv "$base.new" "$base"
  fi
  exec 9>&-
fi
# Roots of other package lists (another branch's dependencies) are removed
# once no run has used them for 3 days: a run on another branch may be
# copying one right now. ($suite-KEY is where roots were kept before
# systemd-$suite-KEY.)
touch "$base.used"
for used in "$cache/systemd-$suite"-*.used "$cache/$suite"-*.used; do
  if [ -f "$used" ] && [ "$used" != "$base.used" ] && [ -n "$(find "$used" -mtime +3)" ]; then
    note "removing ${used%.used}, unused for 3 days"
    rm -rf "${used%.used}" "$used"
  fi
done
pass

# ---- boot ------------------------------------------------------------------------

step "boot a copy with systemd-nspawn -b --private-network; PID 1 reaches 'running'"
root=$tmp/root
cp -a "$base" "$root"
echo weft-ci >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 weft-ci\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# INSTALL.md's apt-get lines must not stop at a prompt; there is no mirror.
printf 'APT::Get::Assume-Yes "true";\nAcquire::Retries "0";\n' >"$root/etc/apt/apt.conf.d/90weft-ci"
mkdir -p "$root/root/weft/src" "$root/root/weft/plugin"
cp "$deb" "$devdeb" "$tmp/upgrades/"*.deb "$root/root/weft/"
cp "$src/tests/plugins/crashy.c" "$src/tests/plugins/blocker.c" "$root/root/weft/plugin/"
# Both fixtures are ABI 1 plugins (the suite builds them against the frozen
# 1.1-era header too): built so here, they also show an installed weft
# serving ABI 1 builds through its compatibility table.
mkdir -p "$root/root/weft/plugin/abi11/weft"
cp "$src/tests/abi/abi11/weft/plugin.h" "$root/root/weft/plugin/abi11/weft/"
start_nspawn
await_up
systemd_v=$(cin systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p')
pg_major=$(cin ls /usr/lib/postgresql | sort -n | tail -n 1)
cgroup_fs=$(cin stat -fc %T /sys/fs/cgroup)
if [ -n "$unified" ] && [ "$cgroup_fs" != cgroup2fs ]; then
  fail "the container's /sys/fs/cgroup is $cgroup_fs, not the unified hierarchy (cgroup2fs) it was booted with"
fi
# shellcheck disable=SC2016 # the container's own $PRETTY_NAME
os=$(cin sh -c '. /etc/os-release && echo "$PRETTY_NAME"')
note "container PID 1 is $pid1 ($os, systemd $systemd_v, PostgreSQL $pg_major, /sys/fs/cgroup $cgroup_fs), up in $(($(date +%s) - started_at)) s since the start"
pass

# ---- docs/INSTALL.md, as written ----------------------------------------------------


conf=/etc/weft/weft.conf
dropdir=/usr/local/lib/weft/plugins
http=http://127.0.0.1:8080
admin=http://127.0.0.1:9901


step "INSTALL.md §2 as written inside the container: the packages install without a mirror; the unit is there, neither enabled nor started"
doc_commands "## 2." | grep -q "weft_${ver}_" ||
  fail "INSTALL.md §2 does not install version $ver (./weft_${ver}_…deb): the guide and debian/changelog disagree"
: >"$tmp/doc.log"
doc_run "## 2." /root/weft/src
# shellcheck disable=SC2016 # dpkg-query's own ${...}
[ "$(cin dpkg-query -W -f='${db:Status-Status}' weft)" = installed ] || fail "weft is not installed"
[ "$(unit_prop UnitFileState)" = disabled ] || fail "weft.service is $(unit_prop UnitFileState) after the install, not disabled"
[ "$(unit_prop ActiveState)" = inactive ] || fail "weft.service is $(unit_prop ActiveState) after the install, not inactive"
sockets=0
if [ -n "$(cin sh -c 'ls /lib/systemd/system/weft.socket 2>/dev/null' || true)" ]; then
  sockets=1
  [ "$(unit_prop UnitFileState weft.socket)" = disabled ] || fail "weft.socket is enabled by the install"
  [ "$(unit_prop ActiveState weft.socket)" = inactive ] || fail "weft.socket is started by the install"
fi
for d in /var/lib/weft /var/log/weft; do
  m=$(cin stat -c '%U:%G %a' "$d")
  [ "$m" = "weft:weft 750" ] || fail "$d is $m after the install, not weft:weft 750"
done
pass

step "INSTALL.md §3 as written: weft-setup-db creates the role and the database"
: >"$tmp/doc.log"
doc_run "## 3." /root/weft/src
[ "$(csh "cd / && runuser -u postgres -- psql -tAc \"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'weft'\"")" = weft ] ||
  fail "no database weft owned by weft after weft-setup-db"
pass

step "INSTALL.md §4 as written: systemctl enable --now, status, the endpoints"
: >"$tmp/doc.log"
doc_run "## 4." /root/weft/src
[ "$(unit_prop ActiveState)" = active ] || { journal_tail; fail "weft.service is $(unit_prop ActiveState) after enable --now"; }
[ "$(unit_prop UnitFileState)" = enabled ] || fail "weft.service is not enabled after enable --now"
main_pid=$(unit_prop MainPID)
[ "$(cin ps -o user= -p "$main_pid" | tr -d ' ')" = weft ] || fail "weft (pid $main_pid) does not run as user weft"
case $(unit_prop StatusText) in *serving*) ;; *) fail "the unit's status line is '$(unit_prop StatusText)', not 'serving …'" ;; esac
# The sandbox as systemd applied it: no capabilities, no new privileges.
caps=$(cin sh -c "grep -E '^Cap(Eff|Prm|Bnd):' /proc/$main_pid/status" | awk '{print $2}' | sort -u | tr '\n' ' ')
[ "$caps" = "0000000000000000 " ] || fail "weft has capabilities: $caps"
[ "$(cin sh -c "sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/$main_pid/status")" = 1 ] || fail "weft runs without NoNewPrivs"
[ "$sockets" -eq 0 ] || [ "$(unit_prop ActiveState weft.socket)" = active ] ||
  fail "weft.socket is $(unit_prop ActiveState weft.socket) after INSTALL.md §4's enable --now weft (weft.service wants it, ordered before itself)"
[ "$sockets" -eq 0 ] || [ "$(unit_prop UnitFileState weft.socket)" = enabled ] ||
  fail "weft.socket is $(unit_prop UnitFileState weft.socket) after INSTALL.md §4's enable --now weft (Also=weft.socket in weft.service)"
if [ "$sockets" -eq 1 ]; then
  for a in 0.0.0.0 :: ; do
    cin journalctl -u weft -b --no-pager -o cat | grep -q "listen\[[0-9]\]: $a port 8080 is the socket systemd passed" ||
      fail "weft did not adopt weft.socket's socket for $a port 8080 (no 'is the socket systemd passed' line)"
  done
  cin journalctl -u weft -b --no-pager -o cat | grep -q "admin listening on .*(the socket systemd passed" ||
    fail "weft did not adopt weft.socket's socket for the admin listener"
fi
note "weft pid $main_pid: $(unit_prop StatusText)"
# systemd resets a StateDirectory=/LogsDirectory= to 0755 at the first start
# unless the unit says StateDirectoryMode=/LogsDirectoryMode= (issue 26 #5).
for d in /var/lib/weft /var/log/weft; do
  m=$(cin stat -c '%U:%G %a' "$d")
  [ "$m" = "weft:weft 750" ] || fail "$d is $m after the first start, not weft:weft 750 (StateDirectoryMode=/LogsDirectoryMode= in the unit?)"
done
pass

step "INSTALL.md §7: the journal has weft's lines with their priorities"
cin journalctl -u weft -b --no-pager -o cat -p info | grep -q 'serving' || fail "journalctl -u weft has no 'serving' line at priority info or higher"
if cin journalctl -u weft -b --no-pager -o cat -p warning | grep -q 'listening on'; then
  fail "info lines ('listening on') are in the journal at warning or higher: priorities are wrong"
fi
: >"$tmp/doc.log"
doc_run "## 7." /root/weft/src 'journalctl -u weft -f'
pass

step "INSTALL.md §5 as written: an edited config is applied by systemctl reload (under load: no failed request)"
expect "$http/check/hello" 404 ""
gen0=$(cin curl -fsS "$admin/status" | sed -n 's/.*"generation": *\([0-9]*\).*/\1/p' | head -n 1)
add_route '{ path = "/check/hello"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; options = { greeting = "edited and reloaded"; }; }'
add_route '{ path = "/check/slow"; plugin = "delay"; dispatch = "coroutine"; methods = ["GET"]; options = { ms = 3000; }; }'
cnet wrk -t2 -c50 -d4s --timeout 5s "$http/hello" >"$tmp/wrk-reload.txt" 2>&1 &
wrk_pid=$!  # nsenter's, which ends with wrk's 4 s
: >"$tmp/doc.log"
doc_run "## 5." /root/weft/src 'sudoedit'
wait "$wrk_pid" || true
wrk_pid=""
eventually "$http/check/hello" 200 "edited and reloaded"
[ "$(unit_prop MainPID)" = "$main_pid" ] || fail "the reload replaced the process ($main_pid → $(unit_prop MainPID))"
gen1=$(cin curl -fsS "$admin/status" | sed -n 's/.*"generation": *\([0-9]*\).*/\1/p' | head -n 1)
[ "${gen1:-0}" -gt "${gen0:-0}" ] || fail "/status generation $gen0 → $gen1: not reloaded"
[ "$(wrk_failures "$tmp/wrk-reload.txt")" = 0 ] || { cat "$tmp/wrk-reload.txt" >&2; fail "requests failed during the reload"; }
note "reload to generation $gen1 under wrk -c50: $(wrk_requests "$tmp/wrk-reload.txt") requests, 0 failed"
pass

step "a broken config: systemctl reload fails with the reason, weft keeps serving the old one"
c0=$(cursor)
cin cp "$conf" /root/weft/weft.conf.good
csh "printf 'routes = ( { path = \"/broken\"; plugin = \"nosuchplugin\"; } );\nthis is not libconfig\n' >> $conf"
if cin systemctl reload weft >"$tmp/reload-broken.log" 2>&1; then
  fail "systemctl reload weft succeeded with a broken config"
fi
[ "$(unit_prop ActiveState)" = active ] || fail "the broken reload stopped weft ($(unit_prop ActiveState))"
[ "$(unit_prop MainPID)" = "$main_pid" ] || fail "the broken reload replaced the process"
expect "$http/check/hello" 200 "edited and reloaded"
# systemctl itself prints only "Job for weft.service failed. See systemctl
# status ..."; the reason (weft -t's FILE:LINE, at priority err) is where it
# points, as INSTALL.md §5 says (issue 26 #3).
note "systemctl reload weft says: $(tr '\n' ' ' <"$tmp/reload-broken.log" | head -c 200)"
cin systemctl status weft --no-pager -n 20 >"$tmp/status-broken.log" 2>&1 || true
if ! grep -q 'weft.conf:[0-9]' "$tmp/status-broken.log"; then
  cat "$tmp/status-broken.log" >&2
  fail "\`systemctl status weft\` after the broken reload does not show the FILE:LINE reason (output above)"
fi
if ! since "$c0" -p err | grep -q 'weft.conf:[0-9]'; then
  journal_prio "$c0"
  fail "the FILE:LINE reason of the refused reload is not in \`journalctl -u weft -p err\` (weft's lines with their priorities above)"
fi
cin cp /root/weft/weft.conf.good "$conf"
pass

step "INSTALL.md §6 as written: a plugin built with weft-dev in the container and dropped in answers /mine"
# issue 26 #7: the guide installs a compiler before its first cc (this
# root has one anyway, so only the guide's order shows it).
# shellcheck disable=SC2016 # awk's own $
doc_commands "## 6." | awk '/apt-get install .*(gcc|build-essential)/ { c = 1 } /(^| )cc / && !c { bad = 1 }
  END { exit !(c && !bad) }' || fail "INSTALL.md §6 runs cc without installing a compiler first (gcc or build-essential)"
: >"$tmp/doc.log"
# The reader's edit between cp and cc: the plugin's name must be its file's.
doc_run "## 6." /root/weft/plugin "" '^cp ' "sed -i 's/\\.name = \"hello\"/.name = \"myplugin\"/' myplugin.c && grep -q '\\.name = \"myplugin\"' myplugin.c"
expect "$http/mine" 200 hello
pass

step "a truncated drop-in replacing myplugin.so is refused at priority err, the old one serves; a restart with it on disk still starts"
c0=$(cursor)
cin sh -c "head -c 6000 /root/weft/plugin/myplugin.so > /root/weft/plugin/truncated.so"
cin sh -c "install -o root -g root -m 0644 /root/weft/plugin/truncated.so $dropdir/.myplugin.so.new && mv $dropdir/.myplugin.so.new $dropdir/myplugin.so"
i=0
until since "$c0" -p err | grep -q 'refused; generation [0-9]* keeps serving'; do
  [ "$i" -lt 50 ] || { journal_tail; fail "no 'reload … refused; generation N keeps serving' at priority err in the journal within 10 s"; }
  sleep 0.2
  i=$((i + 1))
done
since "$c0" | grep -q 'cannot load: truncated' || { journal_tail; fail "the journal does not say the plugin is truncated"; }
if ! since "$c0" -p err | grep -q 'cannot load: truncated'; then
  journal_prio "$c0"
  fail "the reason of the refused drop-in ('cannot load: truncated') is not at priority err (weft's lines with their priorities above)"
fi
expect "$http/mine" 200 hello
[ "$(unit_prop MainPID)" = "$main_pid" ] || fail "the truncated drop-in replaced the process"
# issue 26 #7: the probe's line counts only the plugins that passed ("N of N … loaded and initialised" was a lie here).
if since "$c0" | grep -Eq 'probe: ([0-9]+) of \1 new plugin version\(s\) loaded and initialised'; then
  since "$c0" | grep 'probe:' >&2
  fail "the probe's line counts the truncated myplugin.so as loaded and initialised (above)"
fi
c0=$(cursor)
cin systemctl restart weft >"$tmp/restart-dropin.log" 2>&1 || true
# Restart=on-failure retries a failed start until the start limit: the end
# of that is active or failed.
await_state "active failed" 30
# A broken drop-in never blocks a start (issue 26 #1): weft starts without
# it (its routes absent, logged at err, named in /health/ready) and serves.
if [ "$(unit_prop ActiveState)" != active ]; then
  journal_tail
  fail "with a truncated drop-in on disk the next start fails ($(unit_prop ActiveState), $(since "$c0" | grep -c 'Start request repeated' || true) x 'Start request repeated too quickly')"
fi
expect "$http/hello" 200 hello
expect "$http/mine" 404 ""
since "$c0" -p err | grep -q 'myplugin' || { journal_prio "$c0"; fail "the start does not say at priority err that myplugin.so was left out"; }
get "$http/health/ready"
case $body in *myplugin*) ;; *) fail "/health/ready does not name the left-out myplugin.so: $code $(echo "$body" | head -c 300)" ;; esac
note "restarted with the truncated myplugin.so on disk: active, /hello 200, /mine 404, /health/ready $code: $(echo "$body" | tr '\n' ' ' | head -c 160)"
# The good plugin back: the watcher swaps it in, /mine answers again.
cin install -o root -g root -m 0644 /root/weft/plugin/myplugin.so "$dropdir/.myplugin.so.new"
cin mv "$dropdir/.myplugin.so.new" "$dropdir/myplugin.so"
eventually "$http/mine" 200 hello
expect "$http/mine" 200 hello
main_pid=$(unit_prop MainPID)
pass

step "a broken myplugin.routes is refused with FILE:LINE at priority err, /mine keeps serving; a restart with it on disk starts without it"
c0=$(cursor)
cin cp "$dropdir/myplugin.routes" /root/weft/myplugin.routes.good
printf 'routes = ( { path = "/mine"; plugin = "myplugin" ) );\n' | put "$dropdir/myplugin.routes" 0644
i=0
until since "$c0" -p err | grep -q 'myplugin.routes:[0-9]'; do
  [ "$i" -lt 50 ] || { journal_prio "$c0"; fail "no 'myplugin.routes:LINE' reason at priority err in the journal within 10 s"; }
  sleep 0.2
  i=$((i + 1))
done
expect "$http/hello" 200 hello
expect "$http/mine" 200 hello
[ "$(unit_prop MainPID)" = "$main_pid" ] || fail "the broken routes file replaced the process"
c0=$(cursor)
cin systemctl restart weft >"$tmp/restart-routes.log" 2>&1 || true
await_state "active failed" 30
if [ "$(unit_prop ActiveState)" != active ]; then
  journal_tail
  fail "with a broken routes file on disk the next start fails ($(unit_prop ActiveState))"
fi
expect "$http/hello" 200 hello
expect "$http/mine" 404 ""
since "$c0" -p err | grep -q 'myplugin.routes:[0-9]' ||
  { journal_prio "$c0"; fail "the start does not say at priority err (with FILE:LINE) that myplugin.routes was left out"; }
get "$http/health/ready"
case $body in *myplugin.routes*) ;; *) fail "/health/ready does not name the left-out myplugin.routes: $code $(echo "$body" | head -c 300)" ;; esac
# The good file back (write, then rename): the watcher reloads, /mine answers.
cin install -o root -g root -m 0644 /root/weft/myplugin.routes.good "$dropdir/.myplugin.routes.new"
cin mv "$dropdir/.myplugin.routes.new" "$dropdir/myplugin.routes"
eventually "$http/mine" 200 hello
main_pid=$(unit_prop MainPID)
pass


if [ "$sockets" -eq 1 ]; then
  # What the socket is for, and proof that the count below can fail:
  # without weft.socket weft binds the addresses itself, and each restart
  # refuses connections while no process listens. Masked, as INSTALL.md says
  # to run without it (weft.service only wants it; stopped alone, the next
  # start of weft would start it again).
  step "without weft.socket (masked), 3 restarts under wrk -c50 refuse connections (the counter sees them)"
  cin systemctl mask --runtime weft.socket >/dev/null 2>&1 || fail "systemctl mask --runtime weft.socket failed"
  cin systemctl stop weft.socket
  cin systemctl restart weft || fail "weft does not restart with weft.socket masked"
  [ "$(unit_prop ActiveState weft.socket)" = inactive ] || fail "a masked weft.socket is $(unit_prop ActiveState weft.socket) after restart weft"
  restarts_under_load 3
  [ "$refused" -gt 0 ] || fail "3 restarts without weft.socket refused no connection: the count of refusals is broken"
  cin systemctl unmask --runtime weft.socket >/dev/null 2>&1 || fail "systemctl unmask --runtime weft.socket failed"
  cin systemctl stop weft
  pass

  # What README.md's `enable --now weft` does to a stopped pair: `start
  # weft` alone must bring the socket up first, and weft adopt it.
  step "systemctl start weft alone starts weft.socket first; 10 restarts under wrk -c50: 0 refused connections, 0 failed requests"
  c0=$(cursor)
  cin systemctl start weft || { journal_tail; fail "weft does not start again"; }
  [ "$(unit_prop ActiveState weft.socket)" = active ] ||
    fail "weft.socket is $(unit_prop ActiveState weft.socket) after systemctl start weft (Wants=weft.socket in weft.service)"
  since "$c0" | grep -q "listen\[[0-9]\]: 0.0.0.0 port 8080 is the socket systemd passed" ||
    { since "$c0" | tail -n 20 >&2; fail "weft started by systemctl start weft did not adopt weft.socket's sockets"; }
  restarts_under_load 10
  [ "$refused" -eq 0 ] || fail "$refused connection(s) refused during the restarts"
  [ "$failures" -eq 0 ] || { cat "$tmp/wrk-restart.txt" >&2; fail "$failures request(s) failed during the restarts"; }
  restart_p99=$p99
  restart_hey_p99=$hey_p99
  pass

  # Three upgrades, each to a higher version: the built .debs repacked as
  # $ver+ci1, +ci2, +ci3 (same files, a higher Version), so dpkg and the maintainer scripts do a real upgrade (prerm
  # upgrade NEW, unpack over the old files, postinst configure OLD) each time.
  step "steady state for the upgrades: wrk -c50 and hey -c10 on /hello for 6 s, nothing restarted"
  restarts_under_load 0 "" 6
  if [ "$refused" -ne 0 ] || [ "$failures" -ne 0 ]; then
    fail "the steady state refused $refused and failed $failures request(s)"
  fi
  steady=$p99
  steady_hey=$hey_p99
  figures="steady: p99 $p99 (hey $hey_p99), $requests + $hey_requests requests"
  figures="$figures; 10 x systemctl restart: p99 $restart_p99 ($(ratio "$restart_p99" "$steady")x steady; hey $restart_hey_p99, $(ratio "$restart_hey_p99" "$steady_hey")x)"
  pass
  from=$ver
  for k in 1 2 3; do
    to="$ver+ci$k"
    step "upgrade $k: $from → $to (apt-get install of both .debs: postinst's weft upgrade hands the sockets over) under wrk -c50 and hey -c10: 0 refused, 0 failed"
    cin test -f "/root/weft/weft_${to}_$arch.deb" || fail "no repacked weft_${to}_$arch.deb"
    m0=$(cursor)
    restarts_under_load 1 "cd /root/weft && apt-get install --allow-downgrades ./weft_${to}_$arch.deb ./weft-dev_${to}_$arch.deb"
    # shellcheck disable=SC2016 # dpkg-query's own ${...}
    [ "$(cin dpkg-query -W -f='${Version}' weft)" = "$to" ] || fail "weft is not at $to after the upgrade"
    [ "$refused" -eq 0 ] || fail "$refused connection(s) refused during the upgrade"
    [ "$failures" -eq 0 ] || { cat "$tmp/wrk-restart.txt" >&2; since "$m0" -o short-precise | tail -n 60 >&2; fail "$failures request(s) failed during the upgrade (wrk's figures and the journal above)"; }
    [ "$(unit_prop ActiveState weft.socket)" = active ] || fail "weft.socket is $(unit_prop ActiveState weft.socket) after the upgrade"
    # A hand-over, not a restart: weft's own lines, to the microsecond.
    since "$m0" | grep -q 'handed its listening sockets to pid' ||
      { since "$m0" | tail -n 20 >&2; fail "upgrade $k did not hand the sockets over (postinst's weft upgrade; the journal above)"; }
    # Unpacking the new plugins did not swap them into the old process
    # (preinst's PIDFILE.hold): the new process loaded them as it started.
    since "$m0" | grep -q 'plugin hot swaps held while /run/weft/weft.pid.hold exists' ||
      { since "$m0" | tail -n 20 >&2; fail "upgrade $k: no 'plugin hot swaps held' line: the unpacked plugins were not held (debian/weft.preinst)"; }
    if since "$m0" | grep -q 'plugin file changed'; then
      since "$m0" | grep 'plugin file changed' >&2; fail "upgrade $k hot-swapped the unpacked plugins into the old process (debian/weft.preinst's hold)"
    fi
    # shellcheck disable=SC2016 # awk's own $
    gap=$(since "$m0" -o short-unix | awk '
      /SIGUSR2: started/ && !a { a = $1 } /is the service.s main process now/ && !b { b = $1 }
      END { if (a && b) printf "the new process served %d ms after SIGUSR2, the old one serving meanwhile", (b - a) * 1000 }')
    note "upgrade $k's hand-over: ${gap:-no 'SIGUSR2: started' / 'main process now' lines in the journal}"
    r=$(ratio "$p99" "$steady")
    figures="$figures; $from → $to: $refused refused, $failures failed, p99 $p99 (${r}x steady; hey $hey_p99, $(ratio "$hey_p99" "$steady_hey")x), $restart_ms ms${gap:+ ($gap)}"
    # A benchmark figure, not a check: the shared machine's load moves it.
    # In microseconds: whole milliseconds rounded each way call 1.98x a miss.
    [ "$(to_us "$p99")" -le $((2 * $(to_us "$steady"))) ] ||
      todo "issue 26 #2: the p99 during upgrade $k is $p99, ${r}x the steady state's $steady (target: 2x)"
    pass
    from=$to
  done

  step "10 x weft upgrade -c /etc/weft/weft.conf (a restart without a gap: the same binary takes the sockets over) under wrk -c50 and hey -c10: 0 refused, 0 failed"
  m0=$(cursor)
  nr0=$(unit_prop NRestarts)
  restarts_under_load 10 "weft upgrade -c /etc/weft/weft.conf"
  [ "$refused" -eq 0 ] || fail "$refused connection(s) refused during the hand-overs"
  [ "$failures" -eq 0 ] || { cat "$tmp/wrk-restart.txt" >&2; since "$m0" -o short-precise | tail -n 80 >&2; fail "$failures request(s) failed during the hand-overs (wrk's figures and the journal above)"; }
  [ "$(since "$m0" | grep -c 'handed its listening sockets to pid')" -ge 10 ] || fail "fewer than 10 hand-overs in the journal"
  if since "$m0" | grep -q 'Watchdog timeout\|Main process exited'; then
    since "$m0" | grep 'Watchdog timeout\|Main process exited' >&2
    fail "systemd lost track of weft across the hand-overs (above)"
  fi
  [ "$(unit_prop NRestarts)" = "$nr0" ] || fail "systemd restarted weft during the hand-overs (NRestarts $nr0 → $(unit_prop NRestarts))"
  # weft upgrade's daemon-reload made the last process systemd's own child:
  # a stop drains it (a main process systemd calls "not our child" is
  # SIGKILLed at once on stop here, systemd 252 on cgroup v1 in a
  # container). Asserted the same in the unified Debian 13 container.
  cnet curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$http/check/slow" >"$tmp/slow-after-upgrade.code" 2>/dev/null &
  slow_job=$!
  i=0
  until [ "$(cin curl -fsS "$admin/metrics" | awk '$1 == "weft_inflight_requests" { print $2 }')" = 1 ]; do
    [ "$i" -lt 50 ] || fail "the request to /check/slow is not in flight within 10 s"
    sleep 0.2
    i=$((i + 1))
  done
  cin systemctl restart weft || fail "systemctl restart weft after the hand-overs failed"
  wait "$slow_job" || true
  [ "$(cat "$tmp/slow-after-upgrade.code")" = 200 ] ||
    { since "$m0" | tail -n 15 >&2; fail "a request in flight at systemctl restart after the hand-overs got '$(cat "$tmp/slow-after-upgrade.code")', not 200 (the journal above)"; }
  figures="$figures; 10 x weft upgrade: p99 $p99 ($(ratio "$p99" "$steady")x steady; hey $hey_p99, $(ratio "$hey_p99" "$steady_hey")x), $restart_ms ms each"
  pass
  note "upgrades under load: $figures"
  upgrade="cd /root/weft && apt-get install --reinstall ./weft_${from}_$arch.deb ./weft-dev_${from}_$arch.deb"

  step "an upgrade leaves a stopped weft stopped (enabled, weft.socket and weft.service stopped)"
  cin systemctl stop weft.socket weft
  csh "$upgrade" >>"$tmp/restart.log" 2>&1 || { tail -n 20 "$tmp/restart.log" >&2; fail "the reinstall failed"; }
  for u in weft.service weft.socket; do
    [ "$(unit_prop ActiveState "$u")" = inactive ] || fail "$u is $(unit_prop ActiveState "$u") after an upgrade of a stopped weft"
    [ "$(unit_prop UnitFileState "$u")" = enabled ] || fail "$u is $(unit_prop UnitFileState "$u") after the upgrade, not enabled"
  done
  cin systemctl start weft.socket weft || fail "weft.socket and weft do not start again"
  expect "$http/hello" 200 hello
  pass
else
  step "weft.socket is installed"
  fail "the package installs no /lib/systemd/system/weft.socket: restarts and upgrades would refuse connections (issue 26 #2)"
fi

# `systemctl reboot` inside: systemd-nspawn exits with status 133 once the
# container has shut down for a reboot (systemd-nspawn@.service restarts it
# on that status: RestartForceExitStatus=133); booted again the same way,
# from the same root, then waited for until 'running'.
reboot_container() {
  before=$pid1
  t_reboot=$(date +%s%N)
  cin systemctl reboot >/dev/null 2>&1 || true
  i=0
  while kill -0 "$nspawn_pid" 2>/dev/null; do
    [ "$i" -lt 600 ] || fail "the container did not shut down within 60 s of systemctl reboot"
    sleep 0.1
    i=$((i + 1))
  done
  st=0
  wait "$nspawn_pid" || st=$?
  nspawn_pid=""
  [ "$st" -eq 133 ] || { tail -n 20 "$tmp/nspawn.log" >&2; fail "systemd-nspawn exited with status $st after systemctl reboot, not 133 (a reboot)"; }
  start_nspawn
  await_up "$before"
  note "rebooted: PID 1 is now $pid1, up again in $((($(date +%s%N) - t_reboot) / 1000000)) ms"
}

step "reboot with weft.socket and weft enabled (and a broken drop-in on disk): both come back on their own, serving, the broken file left out"
cin mkdir -p /etc/weft/routes.d
printf 'routes = ( { path = "/broken-at-boot"; plugin = "hello" ) );\n' | put /etc/weft/routes.d/broken-at-boot.conf 0644
reboot_container
for u in weft.socket weft.service; do
  [ "$(unit_prop UnitFileState "$u")" = enabled ] || fail "$u is $(unit_prop UnitFileState "$u") after the reboot, not enabled"
  [ "$(unit_prop ActiveState "$u")" = active ] || { journal_tail; fail "$u is $(unit_prop ActiveState "$u") after the reboot, not active"; }
done
[ "$(unit_prop NRestarts)" = 0 ] || { journal_tail; fail "weft needed $(unit_prop NRestarts) restart(s) to come up at boot"; }
main_pid=$(unit_prop MainPID)
[ "$(cin ps -o user= -p "$main_pid" | tr -d ' ')" = weft ] || fail "weft (pid $main_pid) does not run as user weft after the reboot"
expect "$http/hello" 200 hello
expect "$http/mine" 200 hello
get "$http/health/ready"
case $body in *broken-at-boot.conf*) ;; *) fail "/health/ready after the reboot does not name the left-out broken-at-boot.conf: $code $(echo "$body" | head -c 300)" ;; esac
cin journalctl -u weft -b --no-pager -o cat -p err | grep -q 'broken-at-boot.conf:[0-9]' ||
  fail "the boot's journal has no FILE:LINE line at priority err for broken-at-boot.conf"
cin rm -f /etc/weft/routes.d/broken-at-boot.conf
pass

step "systemctl disable --now weft.socket weft, then reboot: both stay stopped and disabled, nothing listens; enable --now brings them back"
cin systemctl disable --now weft.socket weft >/dev/null 2>&1 || fail "systemctl disable --now weft.socket weft failed"
reboot_container
for u in weft.socket weft.service; do
  [ "$(unit_prop UnitFileState "$u")" = disabled ] || fail "$u is $(unit_prop UnitFileState "$u") after the reboot, not disabled"
  [ "$(unit_prop ActiveState "$u")" = inactive ] || fail "$u is $(unit_prop ActiveState "$u") after the reboot, not inactive"
done
listening=$(cin ss -Htln '( sport = :8080 or sport = :9901 )')
[ -z "$listening" ] || fail "something listens on 8080 or 9901 after rebooting with weft disabled: $listening"
cin systemctl enable --now weft.socket weft >/dev/null 2>&1 || { journal_tail; fail "systemctl enable --now weft.socket weft failed"; }
expect "$http/hello" 200 hello
expect "$http/mine" 200 hello
pass

# ---- issue 26 #7 and #8, as an operator meets them under systemd ------------------

step "issue 26 #7: weft dev (as a user, packaged pgdev.sh and PostgreSQL $pg_major) stops its private PostgreSQL on SIGTERM and on SIGINT"
csh "id ci >/dev/null 2>&1 || useradd -m -s /bin/sh ci" || fail "cannot add the user ci"
devdir=/home/ci/dev
# shellcheck disable=SC2016 # the inner shell's own $HOME
csh "install -d -o ci -g ci $devdir && cd $devdir && setpriv --reuid=ci --regid=ci --init-groups env HOME=/home/ci weft new-plugin demo $devdir" \
  >"$tmp/dev-new.log" 2>&1 || { cat "$tmp/dev-new.log" >&2; fail "weft new-plugin demo failed as user ci"; }
# Ports of its own: the packaged weft keeps 8080 and 9901.
printf 'listen = ["127.0.0.1:18080"];\nadmin = { listen = "127.0.0.1:19901"; };\n' | put "$devdir/weft.dev.conf" 0644
cin chown -R ci:ci "$devdir"
for sig in TERM INT; do
  cin rm -f /tmp/dev.pid /tmp/dev.log
  # shellcheck disable=SC2016 # the inner shell's own $$
  CIN_TIMEOUT=180 cin sh -c 'echo $$ > /tmp/dev.pid; exec setpriv --reuid=ci --regid=ci --init-groups env HOME=/home/ci weft dev "$1" > /tmp/dev.log 2>&1' sh "$devdir" &
  dev_job=$!
  i=0
  until cin grep -q ' serving ' /tmp/dev.log 2>/dev/null; do
    kill -0 "$dev_job" 2>/dev/null || { cin cat /tmp/dev.log >&2; fail "weft dev exited before serving (its output above)"; }
    [ "$i" -lt 450 ] || { cin cat /tmp/dev.log >&2; fail "weft dev did not serve within 90 s (its output above)"; }
    sleep 0.2
    i=$((i + 1))
  done
  cin grep -q 'dev: private PostgreSQL in' /tmp/dev.log || { cin cat /tmp/dev.log >&2; fail "weft dev started no private PostgreSQL"; }
  pm=$(cin sed -n 1p "$devdir/.weft-dev/pg/data/postmaster.pid")
  dev_pid=$(cin cat /tmp/dev.pid)
  cin kill -0 "$pm" || fail "the private postmaster $pm does not run"
  cin kill "-$sig" "$dev_pid"
  i=0
  while kill -0 "$dev_job" 2>/dev/null; do
    [ "$i" -lt 600 ] || fail "weft dev did not exit within 60 s of SIG$sig"
    sleep 0.1
    i=$((i + 1))
  done
  wait "$dev_job" 2>/dev/null || true
  # Running, not a zombie the container's init has yet to reap.
  if cin sh -c "grep -q '^State:[[:space:]]*[^ZX]' /proc/$pm/status 2>/dev/null"; then
    cin cat /tmp/dev.log >&2
    cin /usr/share/weft/pgdev/pgdev.sh stop "$devdir/.weft-dev/pg" >/dev/null 2>&1 || true
    fail "the private PostgreSQL (postmaster $pm) outlived weft dev after SIG$sig"
  fi
  note "weft dev stopped by SIG$sig: its postmaster $pm is gone"
done
pass

step "issue 26 #7 and #8: PORT and \${VAR} from the unit's Environment=, a credential (LoadCredential=) as admin.token_file, log.format = json in the journal"
cin cp "$conf" /root/weft/weft.conf.before-env
token=weft-ci-admin-token-0123456789abcdef
printf '%s\n' "$token" | put /root/weft/admin-token 0600
cin mkdir -p /etc/systemd/system/weft.service.d
printf '[Service]\nEnvironment=PORT=8081 WEFT_CI_GREETING=from-the-unit-environment\nLoadCredential=admin_token:/root/weft/admin-token\n' |
  put /etc/systemd/system/weft.service.d/check-env.conf 0644
add_route '{ path = "/check/env"; plugin = "hello"; dispatch = "reactive"; methods = ["GET"]; options = { greeting = "${WEFT_CI_GREETING}"; }; }'
csh "sed -i -e 's|^admin = { listen = \"127.0.0.1:9901\"; };|admin = { listen = \"127.0.0.1:9901\"; token_file = \"credential:admin_token\"; };|' \
  -e 's|^  level = \"info\";|  level = \"info\"; format = \"json\";|' $conf"
cin grep -q 'token_file = "credential:admin_token"' "$conf" || fail "could not set admin.token_file in $conf"
cin grep -q 'format = "json"' "$conf" || fail "could not set log.format in $conf"
# weft.socket holds 8080: masked and stopped, so that weft binds PORT's 8081
# itself (started, weft.service would start it again).
cin systemctl mask --runtime weft.socket >/dev/null 2>&1 || fail "systemctl mask --runtime weft.socket failed"
cin systemctl stop weft.socket weft
cin systemctl daemon-reload
c0=$(cursor)
cin systemctl start weft || { journal_tail; fail "weft does not start with PORT=8081, the credential and log.format = json"; }
env_http=http://127.0.0.1:8081
expect "$env_http/hello" 200 hello
expect "$env_http/check/env" 200 from-the-unit-environment
# The packaged /aggregate calls its own persons routes on ${PORT:-8080}: 8081 here; 127.0.0.1:8080 has no listener (502).
expect "$env_http/pool/aggregate?ids=1" 200 ""
code=$(cin curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$admin/reload" 2>/dev/null || true)
[ "$code" = 401 ] || fail "POST /reload without the credential's token: $code, not 401"
code=$(cin curl -sS -o /dev/null -w '%{http_code}' --max-time 30 -X POST -H "Authorization: Bearer $token" "$admin/reload" 2>/dev/null || true)
[ "$code" = 202 ] || fail "POST /reload with the token from the credential (LoadCredential=): $code, not 202"
since "$c0" | grep -q '^{"time": *"[^"]*", *"level": *"info", *"msg": *"[^"]*serving' ||
  { since "$c0" | tail -n 5 >&2; fail "with log.format = json the journal has no JSON 'serving' line (the last lines above)"; }
cin rm -f /etc/systemd/system/weft.service.d/check-env.conf
cin cp /root/weft/weft.conf.before-env "$conf"
cin systemctl daemon-reload
cin systemctl stop weft
cin systemctl unmask --runtime weft.socket >/dev/null 2>&1 || fail "systemctl unmask --runtime weft.socket failed"
cin systemctl start weft.socket weft || { journal_tail; fail "weft.socket and weft do not start again"; }
expect "$http/hello" 200 hello
pass

step "issue 26 #8: logrotate -f /etc/logrotate.d/weft (the packaged file) rotates the access log and weft writes the new one"
csh "sed -i 's|^  # access_log = \"/var/log/weft/access.log\";|  access_log = \"/var/log/weft/access.log\";|' $conf"
cin grep -q '^  access_log = "/var/log/weft/access.log";' "$conf" || fail "could not turn the access log on in $conf"
# Restart-only (CONFIG.md); weft.socket carries the connections across.
cin systemctl restart weft || { journal_tail; fail "weft does not restart with log.access_log"; }
expect "$http/hello" 200 hello
cin grep -q 'GET /hello' /var/log/weft/access.log || fail "/var/log/weft/access.log has no line for GET /hello"
c0=$(cursor)
cin logrotate -f /etc/logrotate.d/weft || fail "logrotate -f /etc/logrotate.d/weft failed"
cin test -s /var/log/weft/access.log.1 || fail "logrotate left no /var/log/weft/access.log.1"
i=0
until since "$c0" | grep -q 'logs reopened (SIGUSR1)'; do
  [ "$i" -lt 50 ] || { journal_tail; fail "no 'logs reopened (SIGUSR1)' line within 10 s of logrotate's postrotate"; }
  sleep 0.2
  i=$((i + 1))
done
n1=$(cin sh -c 'wc -l < /var/log/weft/access.log.1')
expect "$http/hello?after-rotation" 200 hello
cin grep -q 'GET /hello?after-rotation' /var/log/weft/access.log || fail "the new access.log has no line for the request after the rotation"
! cin grep -q 'after-rotation' /var/log/weft/access.log.1 || fail "weft still writes to the rotated access.log.1"
[ "$(cin sh -c 'stat -c "%U:%G %a" /var/log/weft/access.log')" = "weft:weft 640" ] || fail "the new access.log is not weft:weft 0640"
note "rotated: access.log.1 holds $n1 line(s); the new access.log gets the next requests"
cin cp /root/weft/weft.conf.before-env "$conf"
cin systemctl restart weft || fail "weft does not restart without the access log"
pass
main_pid=$(unit_prop MainPID)

step "a crashing handler: systemd restarts weft, the crashing build is quarantined (503), everything else serves; weft quarantine clear lifts it"
cin sh -c "cd /root/weft/plugin && cc -shared -fPIC -fvisibility=hidden -I abi11 \$(pkg-config --cflags weft-plugin) crashy.c -o crashy.so" ||
  fail "tests/plugins/crashy.c does not build in the container against weft-dev"
cin sh -c "install -o root -g root -m 0644 /root/weft/plugin/crashy.so $dropdir/.crashy.so.new && mv $dropdir/.crashy.so.new $dropdir/crashy.so"
printf 'routes = ( { path = "/crashy"; plugin = "crashy"; dispatch = "pool"; methods = ["GET"]; } );\n' |
  put "$dropdir/crashy.routes" 0644
eventually "$http/crashy" 200 fine
# The restarts of the steps before are starts too: with 5 of them in the
# last 10 s (systemd's default start limit; a fast run gets there) the
# restart after the crash would be refused. reset-failed resets the count.
cin systemctl reset-failed weft
restarts0=$(unit_prop NRestarts)
c0=$(cursor)
cin curl -sS --max-time 10 -o /dev/null "$http/crashy?crash=1" 2>/dev/null || true
i=0
while [ "$(unit_prop NRestarts)" = "$restarts0" ]; do
  [ "$i" -lt 100 ] || { journal_tail; fail "systemd did not restart weft within 20 s of the crash"; }
  sleep 0.2
  i=$((i + 1))
done
await_state active 30
[ "$(unit_prop MainPID)" != "$main_pid" ] || fail "weft was not replaced after the crash"
main_pid=$(unit_prop MainPID)
since "$c0" | grep -q 'FATAL: SIGSEGV in route /crashy' || { journal_tail; fail "the journal has no 'FATAL: SIGSEGV in route /crashy' line"; }
expect "$http/crashy" 503 "quarantined"
expect "$http/hello" 200 hello
expect "$http/mine" 200 hello
# The crash handler's FATAL line at priority err or higher (issue 26 #3).
since "$c0" -p err | grep -q 'FATAL: SIGSEGV in route /crashy' ||
  { journal_prio "$c0"; fail "the crash handler's FATAL line is not at priority err or higher (weft's lines with their priorities above)"; }
cin weft quarantine clear crashy -c "$conf" >"$tmp/clear.log" 2>&1 || { cat "$tmp/clear.log" >&2; fail "weft quarantine clear crashy failed"; }
eventually "$http/crashy" 200 fine
cin rm -f "$dropdir/crashy.routes"
eventually "$http/crashy" 404 ""
cin rm -f "$dropdir/crashy.so"
pass

step "a handler that wedges its event loop: weft aborts it before systemd's watchdog (WatchdogSec=4 in a drop-in), names it, and it is quarantined at the restart"
cin sh -c "cd /root/weft/plugin && cc -shared -fPIC -fvisibility=hidden -I abi11 \$(pkg-config --cflags weft-plugin) blocker.c -o blocker.so" ||
  fail "tests/plugins/blocker.c does not build in the container against weft-dev"
cin mkdir -p /etc/systemd/system/weft.service.d
printf '[Service]\nWatchdogSec=4\n' | put /etc/systemd/system/weft.service.d/check-watchdog.conf 0644
cin systemctl daemon-reload
cin systemctl restart weft || fail "weft does not restart with WatchdogSec=4"
[ "$(unit_prop WatchdogUSec)" = 4s ] || fail "the drop-in did not set WatchdogSec=4 ($(unit_prop WatchdogUSec))"
c0=$(cursor)
cin sh -c "install -o root -g root -m 0644 /root/weft/plugin/blocker.so $dropdir/.blocker.so.new && mv $dropdir/.blocker.so.new $dropdir/blocker.so"
printf 'routes = ( { path = "/stuck"; plugin = "blocker"; dispatch = "reactive"; methods = ["GET"]; options = { ms = 60000; }; } );\n' |
  put "$dropdir/blocker.routes" 0644
i=0
until since "$c0" | grep -q 'route /stuck added'; do
  [ "$i" -lt 50 ] || { journal_tail; fail "the route /stuck of the dropped-in blocker plugin was not added within 10 s"; }
  sleep 0.2
  i=$((i + 1))
done
main_pid=$(unit_prop MainPID)
cin systemctl reset-failed weft # the start limit, as before the crash
restarts0=$(unit_prop NRestarts)
c0=$(cursor)
cnet curl -s -o /dev/null --max-time 30 "$http/stuck" >/dev/null 2>&1 &
stuck_job=$!
i=0
while [ "$(unit_prop NRestarts)" = "$restarts0" ]; do
  [ "$i" -lt 100 ] || { journal_tail; fail "weft was not restarted within 20 s of wedging a loop"; }
  sleep 0.2
  i=$((i + 1))
done
wait "$stuck_job" || true
await_state active 30
since "$c0" >"$tmp/stuck.journal"
grep -q "FATAL: SIGABRT (weft's watchdog: event loop [0-9]* had not turned for [0-9]* ms) in route /stuck (plugin blocker" "$tmp/stuck.journal" ||
  { cat "$tmp/stuck.journal" >&2; fail "no attributed FATAL line for the wedged loop (journal above)"; }
if grep -q 'Watchdog timeout' "$tmp/stuck.journal"; then
  cat "$tmp/stuck.journal" >&2
  fail "systemd's watchdog killed weft before weft aborted the wedged loop itself"
fi
expect "$http/stuck" 503 "plugin blocker is quarantined"
expect "$http/hello" 200 hello
cin weft quarantine clear blocker -c "$conf" >/dev/null 2>&1 || fail "weft quarantine clear blocker failed"
cin rm -f "$dropdir/blocker.routes" /etc/systemd/system/weft.service.d/check-watchdog.conf
eventually "$http/stuck" 404 ""
cin rm -f "$dropdir/blocker.so"
cin systemctl daemon-reload
cin systemctl restart weft || fail "weft does not restart without the drop-in"
[ "$(unit_prop WatchdogUSec)" = 30s ] || fail "WatchdogSec is $(unit_prop WatchdogUSec) after removing the drop-in"
pass

step "systemctl stop with 20 requests in flight: every one is answered, the unit ends 'success'"
: >"$tmp/slow.codes"
j=0
pids=""
while [ "$j" -lt 20 ]; do
  cnet curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$http/check/slow" >>"$tmp/slow.codes" 2>/dev/null &
  pids="$pids $!"
  j=$((j + 1))
done
i=0
until [ "$(cin curl -fsS "$admin/metrics" | awk '$1 == "weft_inflight_requests" { print $2 }')" = 20 ]; do
  [ "$i" -lt 50 ] || fail "20 requests to /check/slow are not in flight within 10 s"
  sleep 0.2
  i=$((i + 1))
done
if [ "$sockets" -eq 1 ]; then stop_units="weft.socket weft.service"; else stop_units=weft.service; fi
# shellcheck disable=SC2086 # unit names
cin systemctl stop $stop_units || fail "systemctl stop $stop_units failed"
for p in $pids; do wait "$p" || true; done
[ "$(grep -c '^200$' "$tmp/slow.codes")" = 20 ] || fail "of 20 requests in flight at the stop, only $(grep -c '^200$' "$tmp/slow.codes") got 200 ($(sort "$tmp/slow.codes" | uniq -c | tr '\n' ' '))"
[ "$(unit_prop Result)" = success ] || fail "the unit's Result is $(unit_prop Result) after the stop"
[ "$(unit_prop ExecMainStatus)" = 0 ] || fail "weft exited with status $(unit_prop ExecMainStatus)"
pass

step "INSTALL.md §8 as written: remove, purge, drop the database; nothing left behind"
cin rm -f "$dropdir/myplugin.routes" "$dropdir/myplugin.so"
: >"$tmp/doc.log"
doc_run "## 8." /root/weft/src
for p in weft weft-dev; do
  # shellcheck disable=SC2016 # dpkg-query's own ${...}
  s=$(cin dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ -z "$s" ] || [ "$s" = not-installed ] || fail "package $p is still $s"
done
! cin getent passwd weft >/dev/null || fail "the user weft is still there"
for f in /etc/weft /var/lib/weft /var/log/weft /lib/systemd/system/weft.service /lib/systemd/system/weft.socket \
  /etc/systemd/system/multi-user.target.wants/weft.service /etc/systemd/system/sockets.target.wants/weft.socket /usr/local/lib/weft; do
  [ -z "$(cin sh -c "ls -d $f 2>/dev/null" || true)" ] || fail "$f is still there after the purge"
done
[ "$(unit_prop LoadState)" = not-found ] || fail "systemd still knows weft.service ($(unit_prop LoadState))"
listening=$(cin ss -Htln '( sport = :8080 or sport = :9901 )')
[ -z "$listening" ] || fail "something still listens on 8080 or 9901 after the removal (weft.socket not stopped?): $listening"
pass

step "systemctl poweroff: the container shuts down"
cin systemctl poweroff || true
i=0
while kill -0 "$nspawn_pid" 2>/dev/null; do
  [ "$i" -lt 300 ] || fail "the container did not power off within 30 s"
  sleep 0.1
  i=$((i + 1))
done
wait "$nspawn_pid" || true
nspawn_pid=""
pid1=""
pass

#!/bin/sh
# Installs the Debian packages weft needs, on Debian 12 (bookworm) or
# Debian 13 (trixie), whichever /etc/os-release names:
#   build  compile weft and its plugins
#   run    build + PostgreSQL server binaries for the private dev database
#   test   run + the test suite's libraries and tools, and what makes the
#          suite's Debian 13 root (mmdebstrap, systemd-nspawn)
#   suite  test without those two: what the Debian 13 root itself holds
#   bench  run + what bench/*.sh drive and compare against (not for CI:
#          load generators, reference servers, perf, gnuplot)
# Skips apt entirely when everything is already installed.
#
#   install-deps.sh --list WHAT [RELEASE]   prints WHAT's packages for
#       RELEASE (bookworm or trixie; default: this machine's) on one line,
#       installs nothing: packaging/check-trixie.sh and build-trixie-debs.sh
#       make their Debian 13 root from that list, so it is written once, here.
set -eu

usage() {
  echo "usage: $0 build|run|test|suite|bench" >&2
  echo "       $0 --list build|run|test|suite|bench [bookworm|trixie]" >&2
  exit 2
}

list=0
if [ "${1:-}" = "--list" ]; then
  list=1
  shift
fi
what=${1:-build}

[ $# -le $((1 + list)) ] || usage
release=""
[ "$list" -eq 0 ] || release=${2:-}
if [ -z "$release" ]; then
  # shellcheck disable=SC1091
  release=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  id=$(. /etc/os-release 2>/dev/null && echo "${ID:-?} ${VERSION_ID:-?}")
  case $release in
    bookworm | trixie) ;;
    *)
      echo "install-deps.sh: this machine is '$id' (${release:-no VERSION_CODENAME} in /etc/os-release); weft's package lists are for Debian 12 (bookworm) and Debian 13 (trixie)" >&2
      exit 1
      ;;
  esac
fi

# Names that differ between the releases. The -dev packages keep their
# names across Debian 13's 64-bit time_t transition; the renamed runtime
# libraries (libssl3t64, libcurl4t64, ...) come in through them, and the
# weft package's own Depends come from dpkg-shlibdeps, so none is named here.
case $release in
  bookworm)
    pg=15
    clang_rt=libclang-rt-14-dev
    ;;
  trixie)
    pg=17
    clang_rt=libclang-rt-19-dev
    ;;
  *)
    echo "install-deps.sh: unknown release '$release' (bookworm or trixie)" >&2
    exit 2
    ;;
esac

# h2o itself is embedded (third_party/h2o; Debian 13 has none, Debian 12's
# is 2018's 2.2.5). What that copy compiles against: OpenSSL, zlib, brotli and zstd (its
# compression), wslay (WebSockets), libyaml (yaml.h: the library's
# configurator sources include yoml, although weft never calls them; h2o's
# own server, the benchmark's ceiling, reads YAML), perl (quicly's tracer
# generator).
h2o_deps="libssl-dev zlib1g-dev libbrotli-dev libzstd-dev libwslay-dev libyaml-dev perl"
build="build-essential cmake pkg-config $h2o_deps libconfig-dev libgmp-dev libjansson-dev libpq-dev libsystemd-dev libcriterion-dev libcurl4-openssl-dev"
run="$build postgresql-$pg postgresql-client-$pg"
# Building weft's .debs (the Build-Depends beyond $build: debhelper-compat)
# and linting them: packaging/build-trixie-debs.sh does both inside the
# Debian 13 root, packaging/check-debian.sh on this machine.
debs="debhelper dpkg-dev lintian"
# prometheus: its promtool checks every answer of /metrics (tests/integration/promtool.c);
# pgbouncer: the database suites run through it too (tests/pgbouncer.sh).
# The coroutine switch's aarch64 test (tests/switch/): a cross compiler with
# its static C library, and qemu-user to run the result (static binaries on
# Debian 13, where qemu-user-static is only a transitional name for it).
cross="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
suite="$run libcriterion-dev libcurl4-openssl-dev libpng-dev curl chromium chromium-driver fonts-dejavu-core util-linux clang $clang_rt python3 python3-h2 python3-websockets python3-brotli python3-zstandard openssl gdb git media-types prometheus pgbouncer $cross $debs"
# The host's tools for the suite's Debian 13 stage (packaging/check-trixie.sh),
# which are not needed inside that root.
# pebble and certbot: packaging/check-acme.sh, and testssl.sh: packaging/check-testssl.sh,
# run on the host after the plain suite.
# haproxy, wrk, hey, python3-yaml (the rules read back) and iproute2 (ss),
# with the suite's prometheus and pgbouncer: the reference deployment
# packaging/check-cluster.sh runs (docs/CLUSTER.md).
test="$suite mmdebstrap systemd-container pebble certbot testssl.sh haproxy wrk hey python3-yaml iproute2"
bench="$run wrk nghttp2-client nginx-light gnuplot-nox linux-perf strace procps iproute2 curl openssl"
case $what in
  build) pkgs=$build ;;
  run) pkgs=$run ;;
  test) pkgs=$test ;;
  suite) pkgs=$suite ;;
  bench) pkgs=$bench ;;
  *) usage ;;
esac

if [ "$list" -eq 1 ]; then
  # One name per word, each once, in the order above.
  echo "$pkgs" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ' | sed 's/ $//'
  echo
  exit 0
fi

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null

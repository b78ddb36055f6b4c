#!/bin/sh
# Installs the Debian 12 packages weft needs:
#   build  compile weft and its plugins
#   run    build + PostgreSQL server binaries for the private dev database
#   test   run + the test suite's libraries and tools
#   bench  run + what bench/*.sh drive and compare against (not for CI:
#          load generators, reference servers, perf, gnuplot)
# Skips apt entirely when everything is already installed.
set -eu
what=${1:-build}

build="build-essential cmake pkg-config libh2o-evloop-dev libwslay-dev libssl-dev libconfig-dev libgmp-dev libjansson-dev libpq-dev libsystemd-dev libcriterion-dev libcurl4-openssl-dev"
run="$build postgresql-15 postgresql-client-15"
test="$run libcriterion-dev libcurl4-openssl-dev libpng-dev curl chromium chromium-driver fonts-dejavu-core util-linux clang libclang-rt-14-dev python3 python3-h2 python3-websockets openssl gdb"
bench="$run wrk nghttp2-client h2o nginx-light gnuplot-nox linux-perf strace procps iproute2 curl openssl"
case $what in
  build) pkgs=$build ;;
  run) pkgs=$run ;;
  test) pkgs=$test ;;
  bench) pkgs=$bench ;;
  *) echo "usage: $0 build|run|test|bench" >&2; exit 2 ;;
esac

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

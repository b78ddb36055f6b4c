#!/bin/sh
# check-container.sh — the container image of packaging/container, built from
# weft's .deb and run with podman the way docs/KUBERNETES.md runs it.
#
# No registry is reachable from CI, so the image's base (debian:bookworm-slim
# in the Dockerfile) is replaced (`podman build --from`) by one imported from
# an mmdebstrap tarball: `mmdebstrap --variant=apt bookworm` with the .deb's
# runtime dependencies already in (so the Dockerfile's apt-get install only
# adds weft), cached under $WEFT_CI_CACHE (default /var/cache/weft-ci) and
# keyed by that package list. The image is built from the Dockerfile as
# written and checked three times, each in its own container with no network
# (--network none; this script's curl reaches it with nsenter -n):
#   1. the packaged config (/etc/weft/weft.conf of the .deb) as the image
#      ships it: it starts (issue 26 defect 6: it could not create
#      /run/weft), serves /hello and /health/live, and /health/ready answers;
#   2. packaging/k8s/configmap.yaml's weft.conf mounted read-only over
#      /etc/weft on a read-only root filesystem, as deployment.yaml does:
#      /hello, /health/live, /metrics;
#   3. the same plus a 3 s route: `podman stop` with 10 requests in flight
#      answers every one and the container exits 0 (the drain).
# Containers run with `--runtime runc --ulimit nofile=20000:20000 --ulimit
# nproc=32768:32768`: crun, and podman without those ulimits, fail in a
# sandbox without CAP_SYS_RESOURCE.
#
# The .deb: WEFT_DEBS_DIR=DIR holding weft_*.deb (packaging/test.sh passes
# check-debian.sh's); without it this script stops with an error. It needs
# root, podman (installed with apt-get if missing), runc, mmdebstrap and the
# Debian mirror (the first time, and the Dockerfile's apt-get update).
# When podman cannot run a container on this machine it prints
# "SKIP: <the reason>" and exits 0. Everything it starts (containers, the
# image it built) is removed on exit, failed or not; the base image stays
# for the next run. Every wait has a deadline. About a minute with a cached
# base. Exit status: 0 if every check passed or the stage was skipped.
set -eu

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "check-container.sh: run it as root" >&2; exit 1; }
  exec sudo -- env WEFT_DEBS_DIR="${WEFT_DEBS_DIR:-}" WEFT_CI_CACHE="${WEFT_CI_CACHE:-}" "$0" "$@"
fi

src=$(cd "$(dirname "$0")/.." && pwd -P)
. "$src/packaging/lib/deb-suite.sh"
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
cache=${WEFT_CI_CACHE:-/var/cache/weft-ci}
started_at=$(date +%s)
run_opts="--runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768"

me=check-container.sh
. "$src/packaging/lib/steps.sh"
skip() {
  echo "SKIP: check-container.sh: $*" >&2
  skipped=1
  exit 0
}
skipped=0

tmp=""
containers=""
image=""
cleanup() {
  rc=$?
  set +e
  trap - EXIT INT TERM
  for c in $containers; do timeout 30 podman rm -f -t 0 "$c" >/dev/null 2>&1; done
  [ -z "$image" ] || timeout 30 podman rmi -f "$image" >/dev/null 2>&1
  [ -n "$tmp" ] && rm -rf "$tmp"
  if [ "$skipped" -eq 1 ]; then exit 0; fi
  echo "" >&2
  echo "check-container.sh summary ($(($(date +%s) - started_at)) s):$results" >&2
  if [ "$rc" -eq 0 ] && [ -z "$failed" ]; then
    echo "PASS: weft's container image under podman" >&2
  else
    echo "  FAIL  ${failed:-$current (exit status $rc)}" >&2
    echo "FAIL: check-container.sh" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'failed="${current:-start}: interrupted"; exit 130' INT TERM

# ---- preconditions ------------------------------------------------------------

step "preconditions: podman, runc, mmdebstrap, curl; the .deb"
debs=${WEFT_DEBS_DIR:-}
[ -n "$debs" ] || fail "WEFT_DEBS_DIR is not set: name a directory holding weft_*.deb (packaging/check-debian.sh builds one)"
deb=""
for f in "$debs"/weft_*.deb; do [ -f "$f" ] && deb=$f; done
[ -n "$deb" ] || fail "no weft_*.deb in $debs"
ver=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
[ "$arch" = amd64 ] || skip "the Dockerfile copies weft_*_amd64.deb; this .deb is $arch"
missing=""
for p in podman runc mmdebstrap curl util-linux; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  note "installing:$missing"
  # shellcheck disable=SC2086 # a list of package names
  if ! { apt-get -y -q -o DPkg::Lock::Timeout=600 update >/dev/null &&
    apt-get -y -q -o DPkg::Lock::Timeout=600 install --no-install-recommends $missing >/dev/null; }; then
    skip "apt-get install$missing failed: podman and runc are not available on this machine"
  fi
fi
tmp=$(mktemp -d /tmp/weft-check-container.XXXXXX)
pass

# ---- the base image, cached -------------------------------------------------------

deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' |
  grep -v -e '^$' -e '^weft' | sort -u | tr '\n' ',' | sed 's/,$//')
key=$(printf '%s\n%s\n' "container base v1" "$deps" | sha256sum | cut -c1-16)
tarball=$cache/container-bookworm-$key.tar
base=localhost/weft-ci-base:$key
step "the base image $base (mmdebstrap --variant=apt bookworm, imported)"
mkdir -p "$cache"
if [ ! -f "$tarball" ]; then
  exec 9>"$cache/.container.lock"
  flock -w 600 9 || fail "another run holds $cache/.container.lock for more than 10 minutes"
  if [ ! -f "$tarball" ]; then
    note "building $tarball with mmdebstrap (about a minute), with: $deps"
    # mmdebstrap picks the format from the name: the temporary one ends .tar too.
    if ! timeout 900 mmdebstrap --variant=apt --include="$deps" bookworm "$tarball.new.tar" >"$tmp/mmdebstrap.log" 2>&1; then
      tail -n 30 "$tmp/mmdebstrap.log" >&2
      weft_deb_suite_hint "$tmp/mmdebstrap.log" "$deb" bookworm "$debs" >&2
      rm -rf "$tarball.new.tar"
      fail "mmdebstrap failed (last lines above)"
    fi
    mv "$tarball.new.tar" "$tarball"
  fi
  exec 9>&-
fi
if ! timeout 60 podman image exists "$base"; then
  timeout 300 podman import "$tarball" "$base" >"$tmp/import.log" 2>&1 ||
    { cat "$tmp/import.log" >&2; fail "podman import $tarball failed"; }
fi
# Can this machine run a container at all? If not, say exactly why.
# shellcheck disable=SC2086 # the options, one word each
if ! timeout 120 podman run --rm $run_opts --network none "$base" true >"$tmp/probe.log" 2>&1; then
  skip "podman cannot run a container here (podman run --rm $run_opts --network none $base true): $(tr '\n' ' ' <"$tmp/probe.log" | head -c 400)"
fi
pass

# ---- the image -------------------------------------------------------------------------

image=localhost/weft-ci:$ver-$$
step "podman build packaging/container/Dockerfile (FROM replaced by the base) with weft_${ver}_$arch.deb → $image"
mkdir -p "$tmp/ctx"
cp "$src/packaging/container/Dockerfile" "$deb" "$tmp/ctx/"
# shellcheck disable=SC2086 # the options, one word each
if ! timeout 600 podman build $run_opts --from "$base" -t "$image" "$tmp/ctx" >"$tmp/build.log" 2>&1; then
  tail -n 30 "$tmp/build.log" >&2
  fail "podman build failed (last lines above)"
fi
[ "$(podman image inspect -f '{{.Config.User}}' "$image")" = 10001:10001 ] ||
  fail "the image runs as '$(podman image inspect -f '{{.Config.User}}' "$image")', not 10001:10001"
pass

# ---- running it ----------------------------------------------------------------------------

# Starts a container named $1 from the image with the extra podman options
# $2; waits up to 20 s for its /health/live; sets $cpid (its PID 1 on the host).
start() {
  # shellcheck disable=SC2086 # the options, one word each
  podman run -d --name "$1" $run_opts --network none $2 "$image" >"$tmp/run.log" 2>&1 ||
    { cat "$tmp/run.log" >&2; fail "podman run $1 failed"; }
  containers="$containers $1"
  i=0
  while :; do
    cpid=$(podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null || echo 0)
    if [ "${cpid:-0}" -gt 0 ] && nsenter -t "$cpid" -n curl -fsS -o /dev/null --max-time 2 http://127.0.0.1:8080/health/live 2>/dev/null; then
      break
    fi
    if [ "$(podman inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" != true ]; then
      podman logs "$1" >&2 2>&1 || true
      fail "container $1 exited with status $(podman inspect -f '{{.State.ExitCode}}' "$1" 2>/dev/null) (its log above)"
    fi
    [ "$i" -lt 100 ] || { podman logs "$1" >&2 2>&1 || true; fail "container $1: no answer on /health/live within 20 s (its log above)"; }
    sleep 0.2
    i=$((i + 1))
  done
}
get() { # path: sets $code and $body
  code=$(nsenter -t "$cpid" -n curl -sS -o "$tmp/body" -w '%{http_code}' --max-time 10 "http://127.0.0.1:8080$1" 2>"$tmp/curl.err") ||
    code="000 ($(cat "$tmp/curl.err"))"
  body=$(cat "$tmp/body" 2>/dev/null || true)
}
expect() { # path, status, text the body must contain
  get "$1"
  [ "$code" = "$2" ] || fail "GET $1: status $code, expected $2; body: $(echo "$body" | head -c 300)"
  case $body in
    *"$3"*) ;;
    *) fail "GET $1: body '$(echo "$body" | head -c 300)' lacks '$3'" ;;
  esac
}

step "the packaged config as the image ships it: weft starts (pid_file in /run/weft), serves /hello and /health/live; /health/ready answers"
start weft-ci-pkg-$$ ""
expect /hello 200 hello
expect /health/live 200 ""
# No database in the container: ready says so (503), it does not hang.
get /health/ready
case $code in 200 | 503) ;; *) fail "GET /health/ready: status $code" ;; esac
podman exec weft-ci-pkg-$$ test -s /run/weft/weft.pid || fail "no /run/weft/weft.pid in the container"
note "packaged config: /hello 200, /health/live 200, /health/ready $code (no database in the container)"
pass

# The ConfigMap's weft.conf: the block under `weft.conf: |`, unindented.
mkdir -p "$tmp/k8s"
awk '/^  weft.conf: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' \
  "$src/packaging/k8s/configmap.yaml" >"$tmp/k8s/weft.conf"
grep -q '^routes' "$tmp/k8s/weft.conf" || fail "no weft.conf with routes in packaging/k8s/configmap.yaml"
chmod 0755 "$tmp/k8s"
chmod 0644 "$tmp/k8s/weft.conf"

step "packaging/k8s/configmap.yaml's weft.conf mounted read-only over /etc/weft, read-only root: /hello, /health/live, /metrics"
start weft-ci-k8s-$$ "--read-only -v $tmp/k8s:/etc/weft:ro"
expect /hello 200 hello
expect /health/live 200 ""
expect /metrics 200 weft_requests_total
pass

step "podman stop drains: 10 requests of 3 s in flight are answered, the container exits 0"
mkdir -p "$tmp/k8s-slow"
sed '/^routes = (/a\
  { path = "/check/slow"; plugin = "delay"; dispatch = "coroutine"; methods = ["GET"]; options = { ms = 3000; }; },' \
  "$tmp/k8s/weft.conf" >"$tmp/k8s-slow/weft.conf"
grep -q /check/slow "$tmp/k8s-slow/weft.conf" || fail "could not add the slow route: no line 'routes = (' in the ConfigMap's weft.conf"
chmod 0755 "$tmp/k8s-slow"
chmod 0644 "$tmp/k8s-slow/weft.conf"
name=weft-ci-stop-$$
start "$name" "--read-only -v $tmp/k8s-slow:/etc/weft:ro"
: >"$tmp/slow.codes"
pids=""
j=0
while [ "$j" -lt 10 ]; do
  nsenter -t "$cpid" -n curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 http://127.0.0.1:8080/check/slow >>"$tmp/slow.codes" 2>/dev/null &
  pids="$pids $!"
  j=$((j + 1))
done
i=0
until [ "$(nsenter -t "$cpid" -n curl -fsS --max-time 2 http://127.0.0.1:8080/metrics 2>/dev/null |
  awk '$1 == "weft_inflight_requests" { print $2 }')" = 10 ]; do
  [ "$i" -lt 50 ] || fail "10 requests to /check/slow are not in flight within 10 s"
  sleep 0.2
  i=$((i + 1))
done
# podman stop: SIGTERM (the image's STOPSIGNAL default), SIGKILL after 20 s.
t0=$(date +%s)
timeout 60 podman stop -t 20 "$name" >/dev/null 2>&1 || fail "podman stop $name failed"
for p in $pids; do wait "$p" || true; done
[ "$(grep -c '^200$' "$tmp/slow.codes")" = 10 ] ||
  fail "of 10 requests in flight at podman stop, $(grep -c '^200$' "$tmp/slow.codes") got 200 ($(sort "$tmp/slow.codes" | uniq -c | tr '\n' ' '))"
status=$(podman inspect -f '{{.State.ExitCode}}' "$name")
[ "$status" = 0 ] || { podman logs "$name" >&2 2>&1 || true; fail "weft exited with status $status after podman stop (its log above)"; }
note "podman stop took $(($(date +%s) - t0)) s with 10 requests of 3 s in flight: 10 x 200, exit status 0"
pass

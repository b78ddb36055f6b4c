#!/bin/sh
# check-trixie.sh — the suite's Debian 13 stage: builds weft inside a Debian
# 13 (trixie) root and runs the plain ctest suite there (-DWEFT_WERROR=ON,
# RelWithDebInfo) against a private PostgreSQL 17 started and stopped inside.
#
#   1. The root: `mmdebstrap --variant=important --include=LIST trixie`, LIST
#      being `install-deps.sh --list suite trixie` (so the packages are
#      written once, there). Cached outside the clone in
#      $WEFT_CI_CACHE/trixie-KEY (default /var/cache/weft-ci), KEY a hash of
#      LIST and the mmdebstrap command: a new list makes a new root (about
#      1-4 minutes from the mirror), an unchanged one is reused as it is.
#      Built beside its place and renamed into it, so an interrupted build
#      never leaves half a root; roots of older lists are removed
#      (packaging/lib/trixie-stage.sh, shared with build-trixie-debs.sh).
#   2. The source: what a clean clone has — the files git tracks (with the
#      working tree's content, so uncommitted edits are tested too) plus
#      untracked files that are not ignored, never a build tree — copied to a
#      scratch directory and made a git repository of its own (the doc tests
#      list files with git; packaging/lib/clean-tree.sh).
#   3. `systemd-nspawn -q -D ROOT --register=no --keep-unit --as-pid2
#      --private-network --volatile=overlay --bind=SCRATCH:/ci` (not
#      booted): the root stays untouched (its changes go to a tmpfs), the
#      build and the suite run in /ci/src, the network is loopback only.
#
# Bounded by WEFT_TRIXIE_TIMEOUT seconds (default 2700) for the stage as a
# whole; WEFT_TRIXIE_JOBS sets the parallelism (default nproc),
# WEFT_TRIXIE_CTEST_ARGS adds ctest arguments (-R NAME: some tests only); the scratch directory goes whatever happens. The last line says
# what happened: "check-trixie: Debian 13 ...: N tests passed, 0 failed" or
# "check-trixie: FAILED ...". Exit status 0 only when every test passed.
# Needs root, mmdebstrap and systemd-nspawn (systemd-container), and the
# Debian mirror for a new root.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${WEFT_CI_CACHE:-/var/cache/weft-ci}
limit=${WEFT_TRIXIE_TIMEOUT:-2700}
jobs=${WEFT_TRIXIE_JOBS:-$(nproc)}
# Extra ctest arguments, e.g. "-R integration/websocket" while working on one test.
ctest_args=${WEFT_TRIXIE_CTEST_ARGS:-}
. "$root/packaging/lib/clean-tree.sh"
. "$root/packaging/lib/trixie-stage.sh"
weft_trixie_stage check-trixie "$limit"

# ---- 1. the Debian 13 root, made once per package list (lib/trixie-stage.sh) ----
weft_trixie_root "$root" "$cache"

# ---- 2. the source, as a clean clone has it (lib/clean-tree.sh) ----
scratch=$(mktemp -d /var/tmp/weft-trixie.XXXXXX)
weft_clean_tree "$root" "$scratch/src" || fail "cannot copy the source tree into $scratch/src"
weft_clean_tree_git "$scratch/src" || fail "cannot make the copied tree a git repository"

# ---- 3. build and test inside ----
cat >"$scratch/stage.sh" <<EOF
set -eu
cd /ci/src
versions="\$(. /etc/os-release && echo "\$PRETTY_NAME"), gcc \$(gcc -dumpfullversion), libpq \$(pkg-config --modversion libpq)"
echo "=== inside: \$versions" >&2
echo "=== inside: configure and build" >&2
if ! { cmake -S . -B build -DWEFT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j$jobs; } >/ci/build.log 2>&1; then
  tail -n 60 /ci/build.log >&2
  echo "RESULT build failed (\$versions)"
  exit 1
fi
pg=/tmp/wpg
trap 'packaging/pgdev.sh stop \$pg >/dev/null 2>&1 || true' EXIT
packaging/pgdev.sh start \$pg >&2
eval "\$(packaging/pgdev.sh env \$pg)"
pgv=\$(psql -XtAc "SHOW server_version")
echo "=== inside: test (PostgreSQL \$pgv)" >&2
status=0
set -f # WEFT_CTEST_ARGS: split into words, never globbed
(cd build && ctest --output-on-failure -j$jobs \${WEFT_CTEST_ARGS:-}) >/ci/ctest.log 2>&1 || status=\$?
set +f
cat /ci/ctest.log
line=\$(grep 'tests passed.*tests failed out of' /ci/ctest.log | tail -1)
echo "RESULT \${line:-no ctest summary} (\$versions, PostgreSQL \$pgv)"
exit \$status
EOF

say "building and testing inside the root ($(left) s left of $limit s)"
status=0
weft_trixie_nspawn "$(left)" --setenv=WEFT_CTEST_ARGS="$ctest_args" sh /ci/stage.sh >"$scratch/out.log" 2>&1 ||
  status=$?
weft_trixie_verdict "$status" "$scratch/out.log"
n=$(echo "$result" | sed -n 's/.*tests failed out of \([0-9][0-9]*\).*/\1/p')
echo "check-trixie: Debian 13: ${n:-?} tests passed, 0 failed in $(elapsed) s ($(echo "$result" | sed 's/^[^(]*(//; s/)$//'))"

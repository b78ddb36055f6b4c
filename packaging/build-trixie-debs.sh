#!/bin/sh
# build-trixie-debs.sh OUTDIR — weft's .debs as Debian 13 builds them, for
# the Debian 13 systemd stage (WEFT_SYSTEMD_SUITE=trixie check-systemd.sh):
# a Debian 12 .deb is not what a Debian 13 user installs (its Depends name
# Debian 12's libraries; Debian 13 has the t64 names).
#
#   1. The root: check-trixie.sh's cached Debian 13 root
#      (packaging/lib/trixie-stage.sh: `install-deps.sh --list suite trixie`,
#      which holds the Build-Depends and lintian).
#   2. The source: a scratch copy as a clean clone has it
#      (packaging/lib/clean-tree.sh), under /var/tmp.
#   3. Inside, not booted (systemd-nspawn --volatile=overlay, loopback only):
#      `dpkg-buildpackage -b -us -uc` as check-debian.sh runs it (with the
#      packaged config's `weft -t` check), then `lintian --fail-on
#      error,warning` on the .changes.
#   4. weft_*.deb and weft-dev_*.deb are copied into OUTDIR.
#
# Bounded by WEFT_TRIXIE_TIMEOUT seconds (default 1800) for all of it;
# WEFT_TRIXIE_JOBS sets the build's parallelism (default nproc). The scratch
# directory goes whatever happens. The last line on stdout says what
# happened: "build-trixie-debs: Debian 13: weft_V_A.deb weft-dev_V_A.deb,
# lintian clean, in S s (…)" or "build-trixie-debs: FAILED: …" naming the
# step, with the build log's or lintian's tail on stderr. Needs root,
# mmdebstrap and systemd-nspawn, and the Debian mirror for a new root.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${WEFT_CI_CACHE:-/var/cache/weft-ci}
limit=${WEFT_TRIXIE_TIMEOUT:-1800}
jobs=${WEFT_TRIXIE_JOBS:-$(nproc)}
. "$root/packaging/lib/clean-tree.sh"
. "$root/packaging/lib/trixie-stage.sh"
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
weft_trixie_stage build-trixie-debs "$limit"
[ -d "$out" ] || fail "$out is not a directory"

weft_trixie_root "$root" "$cache"
scratch=$(mktemp -d /var/tmp/weft-trixie-debs.XXXXXX)
weft_clean_tree "$root" "$scratch/src" || fail "cannot copy the source tree into $scratch/src"
[ -f "$scratch/src/debian/control" ] || fail "no debian/control in the copied tree"

# dpkg-buildpackage writes the packages beside the source: into /ci.
cat >"$scratch/stage.sh" <<EOF
set -eu
cd /ci/src
versions="\$(. /etc/os-release && echo "\$PRETTY_NAME"), gcc \$(gcc -dumpfullversion), dpkg \$(dpkg-query -W -f='\${Version}' dpkg-dev), debhelper \$(dpkg-query -W -f='\${Version}' debhelper)"
echo "=== inside: \$versions" >&2
echo "=== inside: dpkg-buildpackage -b -us -uc" >&2
if ! DEB_BUILD_OPTIONS="parallel=$jobs" dpkg-buildpackage -b -us -uc >/ci/build.log 2>&1; then
  tail -n 60 /ci/build.log >&2
  echo "RESULT dpkg-buildpackage failed (\$versions)"
  exit 1
fi
changes=\$(ls /ci/weft_*.changes)
lv=\$(dpkg-query -W -f='\${Version}' lintian)
echo "=== inside: lintian \$lv --fail-on error,warning" >&2
status=0
lintian --fail-on error,warning --display-info "\$changes" >/ci/lintian.log 2>&1 || status=\$?
# lintian's advice against running as root is not about the packages.
grep -v 'running with root privileges is not recommended' /ci/lintian.log >&2 || true
if [ "\$status" -ne 0 ]; then
  echo "RESULT lintian \$lv reports errors or warnings (above; \$versions)"
  exit 1
fi
echo "RESULT lintian \$lv clean (\$versions)"
EOF

say "building the packages inside the Debian 13 root ($(left) s left of $limit s)"
status=0
weft_trixie_nspawn "$(left)" sh /ci/stage.sh >"$scratch/out.log" 2>&1 || status=$?
weft_trixie_verdict "$status" "$scratch/out.log"
debs=""
for f in "$scratch"/weft_*.deb "$scratch"/weft-dev_*.deb; do
  [ -f "$f" ] || fail "dpkg-buildpackage made no $(basename "$f") in the Debian 13 root"
  cp "$f" "$out/" || fail "cannot copy $(basename "$f") to $out"
  debs="$debs $(basename "$f")"
done
echo "build-trixie-debs: Debian 13:$debs, $result in $(elapsed) s"

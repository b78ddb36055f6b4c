#!/bin/sh
# packaging/lib/deb-suite.sh names what mmdebstrap could not find, from the
# lines apt really prints (captured from mmdebstrap 1.3 on Debian 12), and
# says where the .debs came from; any other failure gets no hint.
#   deb_suite_hint.sh packaging/lib/deb-suite.sh
set -eu
# shellcheck source=packaging/lib/deb-suite.sh
. "$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "deb_suite_hint: $*" >&2; exit 1; }
cat >"$tmp/missing.log" <<'LOG'
I: automatically chosen mode: root
E: Unable to locate package libssl3t64
E: setup failed: E: apt-get --yes -oAPT::Get::Simulate=true install -oAPT::Status-Fd=<$fd> -oDpkg::Use-Pty=false libssl3t64 libconfig9 failed
 weft : Depends: libconfig11 but it is not installable
E: Package 'libpq5t64' has no installation candidate
E: mmdebstrap failed to run
LOG
out=$(weft_deb_suite_hint "$tmp/missing.log" /d/weft_0.1.0_amd64.deb bookworm /d)
echo "$out" | grep -q "^weft_0.1.0_amd64.deb depends on packages Debian's bookworm does not have: libconfig11 libpq5t64 libssl3t64 \$" ||
  fail "the missing packages are not named: $out"
echo "$out" | grep -q "WEFT_DEBS_DIR=/d: .debs built on another Debian release" || fail "WEFT_DEBS_DIR is not named: $out"
out=$(weft_deb_suite_hint "$tmp/missing.log" /d/weft_0.1.0_amd64.deb bookworm "")
echo "$out" | grep -q WEFT_DEBS_DIR && fail "built here, yet WEFT_DEBS_DIR is blamed: $out"
printf 'E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease\nE: mmdebstrap failed to run\n' >"$tmp/net.log"
[ -z "$(weft_deb_suite_hint "$tmp/net.log" /d/weft.deb bookworm /d)" ] || fail "a network failure got a hint"
echo "deb_suite_hint: ok"

#!/bin/sh
# The packaged unit keeps what the package set up: /var/lib/weft and
# /var/log/weft stay 0750 (without *DirectoryMode= systemd resets them to
# 0755 at the first start), and ExecReload validates, then signals and
# waits for the server's verdict.
#   unit_file.sh packaging/systemd/weft.service
set -eu
unit=$1
fail() { echo "$unit: $*" >&2; exit 1; }
value() { sed -n "s/^$1=//p" "$unit"; }
[ "$(value StateDirectory)" = weft ] || fail "StateDirectory=weft is missing"
[ "$(value StateDirectoryMode)" = 0750 ] || fail "StateDirectoryMode=0750 is missing (systemd would make /var/lib/weft 0755)"
[ "$(value LogsDirectory)" = weft ] || fail "LogsDirectory=weft is missing"
[ "$(value LogsDirectoryMode)" = 0750 ] || fail "LogsDirectoryMode=0750 is missing (systemd would make /var/log/weft 0755)"
value ExecReload | head -1 | grep -q -- ' -t -c ' || fail "the first ExecReload= must be weft -t (the reasons on stderr, a failed reload)"
value ExecReload | sed -n 2p | grep -q -- 'weft reload -c ' ||
  fail "the second ExecReload= must be weft reload (it waits for the server's verdict and fails with its reasons)"
echo "$unit: ok"

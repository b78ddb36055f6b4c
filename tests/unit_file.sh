#!/bin/sh
# The packaged unit keeps what the package set up: /var/lib/weft and
# /var/log/weft stay 0750 (without *DirectoryMode= systemd resets them to
# 0755 at the first start), and ExecReload validates, then signals and
# waits for the server's verdict, and starting or enabling weft starts or
# enables weft.socket too.
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
# `systemctl enable --now weft` (README.md, INSTALL.md) must be the path that
# refuses nothing on restart: enable follows Also=, but --now starts only
# weft.service, which must then start weft.socket before itself, or it
# binds its own sockets and every restart refuses connections.
value Wants | tr ' ' '\n' | grep -qx weft.socket || fail "Wants=weft.socket is missing (starting weft must start its socket)"
value After | tr ' ' '\n' | grep -qx weft.socket ||
  fail "After=weft.socket is missing (the socket must listen before weft starts, or it is not passed)"
value Also | tr ' ' '\n' | grep -qx weft.socket || fail "Also=weft.socket is missing in [Install] (enable weft must enable its socket)"
echo "$unit: ok"

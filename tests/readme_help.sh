#!/bin/sh
# The README's command list ("## Running weft") names exactly the commands
# `weft --help` prints in its usage lines, each with the same synopsis: a
# command added to the binary without a line in the README (weft upgrade was
# one) fails here, and so does a README line for a command that is gone.
#
#   readme_help.sh README.md WEFT
set -eu
readme=$1
weft=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The first ```text block after the heading; a synopsis ends at two spaces.
awk '/^## Running weft/ {s=1; next} s==1 && /^```text/ {s=2; next} s==2 && /^```/ {exit}
     s==2 && /^weft/ {sub(/  .*/, ""); print}' "$readme" | sort >"$tmp/readme"
"$weft" --help | awk '/^usage: weft/ {sub(/^usage: /, ""); print; next}
     /^       weft/ {sub(/^ +/, ""); print; next} /^$/ {exit}' | sort >"$tmp/help"

[ -s "$tmp/help" ] || { echo "readme_help.sh: no usage lines in '$weft --help'" >&2; exit 1; }
if ! diff -u "$tmp/help" "$tmp/readme" >"$tmp/diff"; then
  echo "readme_help.sh: $readme's command list (## Running weft) differs from 'weft --help' (- help, + README):" >&2
  cat "$tmp/diff" >&2
  exit 1
fi
echo "readme_help.sh: $(wc -l <"$tmp/help") commands, README and --help agree"

#!/bin/sh
# The doc-test runner fails when a documented command is broken: a copy of
# README.md whose `weft new-plugin` line points at an impossible directory
# must fail the author's loop, naming README.md:LINE and the exit status;
# and a fence without an info string must fail the lint.
# Usage: selftest.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
tmp=$(mktemp -d /tmp/weft-doctest-self.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

line=$(grep -n 'weft new-plugin greeter plugins-dev' "$src/README.md" | head -n 1 | cut -d: -f1)
[ -n "$line" ] || fail "README.md has no 'weft new-plugin greeter plugins-dev' line to break"
sed 's|weft new-plugin greeter plugins-dev|weft new-plugin greeter /proc/plugins-dev|' "$src/README.md" >"$tmp/README.md"
/usr/bin/python3 "$src/tests/doctest/doctest.py" --tree "$src" --scenario author --prebuilt "$build" \
  --doc "README.md=$tmp/README.md" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ "$rc" -eq 1 ] || fail "the runner exited $rc on a broken command, expected 1"
grep -q "^FAIL: README.md:$line: .*exited with status" "$tmp/out" || fail "the failure does not name README.md:$line and the exit status"

mkdir "$tmp/tree" "$tmp/tree/docs"
printf '# x\n\n```\nplain\n```\n' >"$tmp/tree/README.md"
/usr/bin/python3 "$src/tests/doctest/doctest.py" --tree "$tmp/tree" --lint >"$tmp/lint" 2>&1
rc=$?
cat "$tmp/lint"
[ "$rc" -eq 1 ] && grep -q "README.md:3: a fence without an info string" "$tmp/lint" || fail "the lint missed a bare fence"
echo "PASS: the runner fails on a broken documented command and on an unmarked block"

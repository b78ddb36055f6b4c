#!/bin/sh
# Quick start, step 1: install what weft needs, build it, and serve
# etc/weft.conf on port 8080 from the build tree. Ctrl-C stops it.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
packaging/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
WEFT_PLUGIN_PATH="$root/build/plugins" exec "$root/build/server/weft" -c "$root/etc/weft.conf" "$@"

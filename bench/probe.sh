#!/usr/bin/env bash
#
# bench/probe.sh — what the plugin probe adds to a reload. Serves the bundled
# plugins, then replaces hello.so by rename ROUNDS times (each is new code:
# a probe child runs) and reloads the unchanged config ROUNDS times (no new
# code: no probe), and reports the reload latency of both (from "building
# generation N" to "generation N serving" in the log) and the probe's wall
# and CPU time (the CPU time does not depend on how busy the machine is).
#
#   WEFT_BUILD=DIR bench/probe.sh      (default DIR: build-bench; ROUNDS=20)
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
ROUNDS=${ROUNDS:-20}
if [[ ! -x $BUILD/server/weft ]]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWEFT_TESTS=OFF >/dev/null
    cmake --build "$BUILD" -j2 >/dev/null
fi
TMP=$(mktemp -d /tmp/wprobe.XXXXXX)
chmod 0755 "$TMP"
WEFT_PID=
cleanup() {
    [[ -n $WEFT_PID ]] && kill "$WEFT_PID" 2>/dev/null && wait "$WEFT_PID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -m 0755 "$TMP/plugins"
cp "$BUILD"/plugins/{hello,cpu,delay,locked}.so "$TMP/plugins/"
cat > "$TMP/weft.conf" <<CONF
threads = 2;
listen = ["127.0.0.1:0"];
admin = false;
plugin_dirs = ["plugins"];
pools = ({ name = "default"; size = 4; queue = 100; });
routes = (
  { path = "/hello"; plugin = "hello"; dispatch = "reactive"; },
  { path = "/cpu"; plugin = "cpu"; dispatch = "pool"; },
  { path = "/delay"; plugin = "delay"; dispatch = "coroutine"; },
  { path = "/locked"; plugin = "locked"; dispatch = "pool"; }
);
CONF
WEFT_PLUGIN_PATH= "$BUILD/server/weft" -c "$TMP/weft.conf" >"$TMP/log" 2>&1 &
WEFT_PID=$!
until grep -q "serving" "$TMP/log"; do sleep 0.1; done
wait_generation() { until grep -q "generation $1 serving" "$TMP/log"; do sleep 0.05; done; }
gen=1
for i in $(seq "$ROUNDS"); do
    # trailing bytes: still the same code, but another file (another build)
    cp "$TMP/plugins/hello.so" "$TMP/plugins/.hello.new"
    printf '%06d' "$i" >>"$TMP/plugins/.hello.new"
    mv "$TMP/plugins/.hello.new" "$TMP/plugins/hello.so"
    gen=$((gen + 1)); wait_generation "$gen"
done
for _ in $(seq "$ROUNDS"); do
    kill -HUP "$WEFT_PID"
    gen=$((gen + 1)); wait_generation "$gen"
done
/usr/bin/python3 - "$TMP/log" <<'PY'
import datetime, re, statistics, sys
def t(line): return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f")
start, kind, lat, wall, cpu = None, None, {"new plugin code": [], "config only": []}, [], []
for line in open(sys.argv[1], errors="replace"):
    if "building generation" in line:
        start, kind = t(line), "new plugin code" if "plugin file changed" in line else "config only"
    m = re.search(r"child process in ([0-9.]+) ms \(([0-9.]+) ms CPU", line)
    if m and start:
        wall.append(float(m.group(1))); cpu.append(float(m.group(2)))
    if "reload: generation" in line and "serving" in line and start:
        lat[kind].append((t(line) - start).total_seconds() * 1000); start = None
def row(name, v):
    v = sorted(v)
    print(f"| {name} | {len(v)} | {statistics.median(v):.1f} | {v[max(0, int(len(v) * .9) - 1)]:.1f} | {v[0]:.1f} |")
print("| measured | n | median ms | p90 ms | min ms |\n|---|---|---|---|---|")
for k, v in lat.items(): row(f"reload latency, {k}", v)
row("probe, wall time", wall)
row("probe, CPU time (child)", cpu)
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"

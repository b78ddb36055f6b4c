#!/usr/bin/env bash
# Compressed JSON throughput: the same 8 KiB JSON answer of varied records (the tests' `typed`
# fixture, reactive) fetched by wrk without Accept-Encoding and with each of
# gzip, br and zstd, in one run on one server with `compress` on; requests/s
# as a ratio of the uncompressed run, and the bytes each answer takes on the
# wire. Each run: 2 s warm-up, then BENCH_SECONDS (default 5) measured; ROUNDS
# (default 3) rounds in which every coding runs once, the median per coding.
# Bounded: about 4 × ROUNDS × (2 + BENCH_SECONDS) s.
#
#   bench/compress.sh [--write]    --write puts the table into docs/BENCHMARKS.md
#
# Environment: BENCH_SECONDS, CONNS (default 50), SIZE (bytes of JSON, default
# 8192), WEFT_BUILD (a build directory with server/weft; the fixture is built
# there with its tests enabled; default <repo>/build-bench, built as Release).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_BUILD:-$ROOT/build-bench}
SECONDS_EACH=${BENCH_SECONDS:-5}
CONNS=${CONNS:-50}
SIZE=${SIZE:-8192}
ROUNDS=${ROUNDS:-3}
DOC=$ROOT/docs/BENCHMARKS.md
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# shellcheck source=bench/r2lib.sh
. "$ROOT/bench/r2lib.sh"
bench_setup compress "$@"

for t in wrk curl; do command -v $t >/dev/null || die "$t missing: packaging/install-deps.sh bench"; done
if [[ ! -x $BUILD/server/weft || ! -f $BUILD/tests/fixtures/typed.so ]]; then
    log "building weft and the typed fixture in $BUILD"
    type=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="${type:-Release}" -DWEFT_TESTS=ON >"$TMP/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" --target weft fx_typed >>"$TMP/cmake.log" 2>&1 ||
        { cat "$TMP/cmake.log" >&2; die "build failed"; }
fi
BUILD_TYPE=$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$BUILD/CMakeCache.txt")

port=
free_port port
cat >"$TMP/weft.conf" <<EOF
threads = $(nproc);
listen = [ "127.0.0.1:$port" ];
plugin_dirs = [ "$BUILD/tests/fixtures" ];
admin = false;
log = { level = "warn"; };
compress = { min_size = 256; };
routes = ( { path = "/json"; plugin = "typed"; dispatch = "reactive"; methods = ["GET"]; } );
EOF
# shellcheck disable=SC2046 # one word per variable to unset
env $(env | awk -F= '/^PG/ {printf "-u %s ", $1}') "$BUILD/server/weft" -c "$TMP/weft.conf" 2>>"$TMP/weft.log" &
PIDS+=("$!")
url="http://127.0.0.1:$port/json?records&size=$SIZE"
wait_http "$url"
wrk_lua

# one CODING — "rps p50=ms p99=ms errors=N" for one measured run.
one() {
    local h=()
    [[ $1 != identity ]] && h=(-H "Accept-Encoding: $1")
    wrk -t2 -c"$CONNS" -d2s "${h[@]}" "$url" >/dev/null 2>&1 # warm-up
    wrk -t2 -c"$CONNS" -d"${SECONDS_EACH}s" --timeout 10s "${h[@]}" -s "$TMP/report.lua" "$url" 2>&1 |
        awk '/^RESULT/ { printf "%.0f p50=%.2f p99=%.2f errors=%d\n", $2 / ($3 / 1e6), $4 / 1000, $5 / 1000, $6 }'
}

# The load of this shared machine drifts: the codings take turns, round by
# round, so a drift costs each of them alike instead of whichever ran last.
codings=(identity gzip br zstd)
declare -A wire vals all
for coding in "${codings[@]}"; do
    ae=()
    [[ $coding != identity ]] && ae=(-H "Accept-Encoding: $coding")
    got=$(curl -fsS "${ae[@]}" -o /dev/null -w '%{size_download} %header{content-encoding}' "$url")
    wire[$coding]=${got%% *}
    enc=${got#* }
    [[ $coding == identity && -z $enc ]] || [[ $enc == "$coding" ]] || die "asked for $coding, got '${enc}'"
    log "$coding: ${wire[$coding]} bytes an answer"
done
for ((round = 1; round <= ROUNDS; round++)); do
    for coding in "${codings[@]}"; do
        out=$(one "$coding")
        [[ -n $out ]] || die "wrk gave no result for $coding"
        vals[$coding]+="${out%% *} "
        all[$coding]+="${out};"
        log "round $round/$ROUNDS $coding: $out"
    done
done
rows=
for coding in "${codings[@]}"; do
    # shellcheck disable=SC2086 # one word per run
    read -r R_MED R_MIN R_MAX R_SPREAD <<<"$(stats ${vals[$coding]})"
    R_ALL=${all[$coding]}
    [[ $coding == identity ]] && base=$R_MED
    ratio=$(awk -v a="$R_MED" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
    rows+="| $coding | $(fmt "$R_MED" "$R_MIN" "$R_MAX") | ${ratio}× | ${wire[$coding]} | $(awk -v w="${wire[$coding]}" -v s="${wire[identity]}" 'BEGIN { printf "%.1f", 100 * w / s }') % | $(field p50) | $(field p99) | $(field errors) | $ROUNDS |
"
done

section="<!-- compress:begin -->
### Compressed JSON answers

\`bench/compress.sh\`: one weft (${BUILD_TYPE:-RelWithDebInfo} build, $(nproc) loops, \`compress = { min_size = 256; }\`),
\`GET /json?records&size=$SIZE\` (the \`typed\` test fixture under \`reactive\`: a JSON array of about $SIZE bytes of varied records), wrk -t2 -c$CONNS,
2 s warm-up and ${SECONDS_EACH} s measured per run, $ROUNDS rounds in which each coding runs once (so a drifting load
costs them alike), the median (min–max) shown; each coding asked for with
\`Accept-Encoding\`, h2o's compressors at level 1. The ratio is to the uncompressed run of the same invocation.

| Accept-Encoding | req/s | vs identity | bytes on the wire | of the JSON | p50 ms | p99 ms | errors | runs |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows}
wrk runs on the same cores as weft, so every figure is shared with the client; compare the rows with each other.
_$(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?");
1-minute load average at the end: $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores shared with other jobs._
<!-- compress:end -->"
printf '%s\n' "$section"
((WRITE)) && replace_section "$DOC" "<!-- compress:begin -->" "<!-- compress:end -->" "$section"
exit 0

# Helpers of bench/round2.sh (sourced, not run): repeated measurements with
# median and range, load generators' reports, reference servers, SVG charts.
# Expects ROOT (and SECS for the measurements) from the caller, which calls
# bench_setup first.

# ---- a script's start ----

# bench_setup NAME "$@" — what every bench script sets up first: WRITE (1 with
# --write as first argument), TMP (removed at exit, and a private PostgreSQL
# in $TMP/pg stopped if one was started there), PIDS (processes stopped at
# exit), log() and die() naming the script.
bench_setup() {
    BENCH_NAME=$1
    WRITE=0
    [[ ${2:-} == --write ]] && WRITE=1
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/weft-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}
log() { echo "${BENCH_NAME:-bench}.sh: $*" >&2; }
die() { log "$*"; exit 1; }
bench_cleanup() {
    local rc=$? p # the script's own status, whatever cleaning up returns
    for p in "${PIDS[@]}"; do stop_pid "$p"; done
    "$ROOT/packaging/pgdev.sh" stop "$TMP/pg" >/dev/null 2>&1 || true
    rm -rf "$TMP" || true
    exit "$rc"
}

# ---- statistics ----

# stats V1 V2 ... — prints "median min max spread%" (spread = (max-min)/median).
stats() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%s %s %s %.1f\n", m, v[1], v[NR], (m > 0 ? 100 * (v[NR] - v[1]) / m : 0) }'
}

# repeat FN ARGS... — runs FN (which prints one number, or "metric=value ..."
# lines whose first field is the figure) 3 times; when the spread of the
# first figure exceeds 10 %, twice more (median of 5 then). Sets R_MED R_MIN
# R_MAX R_SPREAD R_N and R_ALL (every run's full output line, ";"-separated).
repeat() {
    local vals=() i out
    R_ALL=
    for ((i = 0; i < 5; i++)); do
        out=$("$@") || die "$* failed"
        vals+=("${out%% *}")
        R_ALL+="${out};"
        if ((i == 2)); then
            read -r R_MED R_MIN R_MAX R_SPREAD <<<"$(stats "${vals[@]}")"
            awk -v s="$R_SPREAD" 'BEGIN { exit !(s <= 10) }' && break
            log "spread ${R_SPREAD} % over 3 runs of $*: two more runs"
        fi
    done
    R_N=${#vals[@]}
    read -r R_MED R_MIN R_MAX R_SPREAD <<<"$(stats "${vals[@]}")"
}

# ---- servers side by side ----

# tree_ticks PID — CPU time (clock ticks) of a server: the process (every
# thread) and its direct children (nginx's workers). CPU per request does not
# depend on the share of the cores a server gets, which other jobs on the
# machine change from one run to the next; req/s does.
tree_ticks() {
    local p f t=0
    for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        read -ra f <<<"$(sed 's/.*) //' "/proc/$p/stat")"
        t=$((t + f[11] + f[12]))
    done
    echo "$t"
}

# srv_once FN URL PID — FN's "rps ..." line for URL with " cpu_us=" (µs of
# the server's CPU per request over the run, SECS seconds) appended.
srv_once() {
    local t0 out
    t0=$(tree_ticks "$3")
    out=$("$1" "$2")
    awk -v o="$out" -v t=$(($(tree_ticks "$3") - t0)) -v hz="$(getconf CLK_TCK)" -v s="$SECS" \
        'BEGIN { split(o, f, " "); printf "%s cpu_us=%.2f\n", o, (f[1] > 0) ? t / hz * 1e6 / (f[1] * s) : 0 }'
}

# interleaved LABEL FN URL_FORMAT NAME:PORT:PID... — srv_once for each
# server (its port put into URL_FORMAT's %s), one run of each per round and
# the order rotated every round, so a neighbour's burst hits every server
# alike; 3 rounds, 2 more while a server's req/s spread exceeds 10 %, up to
# IV_MAX_ROUNDS (default 5; a caller whose rows swing widely sets 7). Leaves
# each server's req/s figures in IV_RPS[NAME] ("r1 r2 ...") and its runs'
# full lines in IV_ALL[NAME] (";"-separated, as R_ALL).
interleaved() {
    local label=$1 fn=$2 url=$3 round k s port pid out wide sp
    shift 3
    local srvs=("$@")
    declare -gA IV_RPS=() IV_ALL=()
    local max=${IV_MAX_ROUNDS:-5}
    for ((round = 0; round < max; round++)); do
        for ((k = 0; k < ${#srvs[@]}; k++)); do
            IFS=: read -r s port pid <<<"${srvs[(k + round) % ${#srvs[@]}]}"
            # shellcheck disable=SC2059
            out=$(srv_once "$fn" "$(printf "$url" "$port")" "$pid") || die "$s: $fn failed"
            IV_RPS[$s]+="${out%% *} "
            IV_ALL[$s]+="$out;"
        done
        if ((round >= 2 && round % 2 == 0 && round + 1 < max)); then
            wide=0
            for s in "${!IV_RPS[@]}"; do
                # shellcheck disable=SC2086
                read -r _ _ _ sp <<<"$(stats ${IV_RPS[$s]})"
                awk -v s="$sp" 'BEGIN { exit !(s > 10) }' && wide=1
            done
            ((wide)) || break
            log "$label: a spread over 10 % in $((round + 1)) rounds: two more"
        fi
    done
}

# paired_ratio "A1 A2 ..." "B1 B2 ..." — "median min max" of the per-round
# ratios Ai / Bi (runs of one interleaved round sit side by side in time, so
# a drift of the machine's load cancels out of each ratio; a ratio of two
# medians would keep it).
paired_ratio() {
    local r
    r=$(awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) if (y[i] > 0) printf "%.4f\n", x[i] / y[i] }')
    # shellcheck disable=SC2086
    [[ -n $r ]] && stats $r | cut -d' ' -f1-3 || echo "0 0 0"
}

# run_field NAME ALL — the value of "NAME=value" in each run of ALL (runs
# ";"-separated, as IV_ALL[...]), in run order, space-separated.
run_field() {
    tr ';' '\n' <<<"$2" | awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { sub(k "=", "", $i); printf "%s ", $i } }'
}

# field NAME — the median over R_ALL of "NAME=value" (a secondary figure).
field() {
    local v
    v=$(tr ';' '\n' <<<"$R_ALL" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }')
    [[ -n $v ]] || { echo "–"; return; }
    # shellcheck disable=SC2086
    stats $v | cut -d' ' -f1
}

# fmt MEDIAN MIN MAX — "12345 (12000–12500)" with integers.
fmt() { awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%d (%d–%d)", m + 0.5, a + 0.5, b + 0.5 }'; }
fmt1() { awk -v m="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f (%.1f–%.1f)", m, a, b }'; }

# ---- load generators ----

# wrk with a Lua report: prints "rps p50_ms p99_ms errors".
wrk_lua() {
    cat >"$TMP/report.lua" <<'EOF'
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout + e.status))
end
EOF
    cat >"$TMP/random.lua" <<'EOF'
math.randomseed(os.time())
request = function() return wrk.format("GET", wrk.path .. math.random(1, 1000)) end
EOF
    cat "$TMP/report.lua" >>"$TMP/random.lua"
}
# A client runs on the CPUs of BENCH_CLIENT_CPUS (a taskset list) when set,
# with BENCH_CLIENT_THREADS threads (default 2).
client() {
    if [[ -n ${BENCH_CLIENT_CPUS:-} ]]; then taskset -c "$BENCH_CLIENT_CPUS" "$@"; else "$@"; fi
}
# run_wrk CONNS SECONDS URL [script] — "rps=N p50=ms p99=ms errors=N"
run_wrk() {
    local out
    out=$(client wrk -t"${BENCH_CLIENT_THREADS:-2}" -c"$1" -d"$2s" --timeout 10s -s "${4:-$TMP/report.lua}" "$3" 2>&1 | awk '/^RESULT/')
    [[ -n $out ]] || { log "wrk gave no result for $3"; echo "0 p50=0 p99=0 errors=1"; return; }
    awk '{ printf "%.0f p50=%.2f p99=%.2f errors=%d\n", $2 / ($3 / 1e6), $4 / 1000, $5 / 1000, $6 }' <<<"$out"
}
# run_h2load CONNS STREAMS SECONDS URL|-i FILE — "rps=N errors=N"
run_h2load() {
    local c=$1 m=$2 s=$3
    shift 3
    client h2load -c"$c" -m"$m" -t"${BENCH_CLIENT_THREADS:-2}" -D "$s" "$@" 2>&1 |
        awk '/^finished in/ { gsub(",", ""); rps = $4 }
             /^requests:/ { gsub(",", ""); err += $10 }      # failed (errored included)
             /^status codes:/ { gsub(",", ""); err += $7 + $9 } # 4xx, 5xx
             END { printf "%.0f errors=%d\n", rps, err }'
}

# ---- processes ----

# Below the kernel's ephemeral range (32768..): a client socket there could
# hold the port; any socket on it, listening or not, counts as taken.
port_free() { [[ -z $(ss -Htan "sport = :$1") ]]; }
# free_port VAR... — sets each VAR to a free port from 20000..26999, never the
# same twice in a run (hence no $(...): the counter must survive).
NEXT_PORT=$((20000 + $$ % 6000))
free_port() {
    local v
    for v in "$@"; do
        while ! port_free "$NEXT_PORT"; do NEXT_PORT=$((NEXT_PORT + 1)); done
        printf -v "$v" '%s' "$NEXT_PORT"
        NEXT_PORT=$((NEXT_PORT + 1))
    done
}
# wait_http URL — until it answers (any status), 10 s at most.
wait_http() {
    local i
    for ((i = 0; i < 200; i++)); do
        curl -ks -o /dev/null --max-time 1 "$1" && return
        sleep 0.05
    done
    die "nothing answers on $1"
}
# stop_pid PID — TERM, wait.
stop_pid() { [[ -n $1 ]] && { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }; }
hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# ---- charts: horizontal bars as plain SVG, no tool needed ----

# svg_bars FILE TITLE UNIT < rows — rows: "label|median|min|max|limit" (limit
# may be empty); one bar per row, the range as a whisker, the limit as a red tick.
svg_bars() {
    local file=$1 title=$2 unit=$3
    awk -F'|' -v title="$title" -v unit="$unit" '
        { lab[NR] = $1; med[NR] = $2; lo[NR] = $3; hi[NR] = $4; lim[NR] = $5
          top = ($4 > top) ? $4 : top; if ($5 != "" && $5 > top) top = $5 }
        END {
            if (top <= 0) top = 1
            lw = 260; bw = 420; rh = 22; h = 50 + NR * rh + 30; w = lw + bw + 110
            printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h
            printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            printf "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", title
            printf "<text x=\"10\" y=\"38\" fill=\"#555\">%s; bar = median, whisker = min–max, red tick = limit</text>\n", unit
            for (i = 1; i <= NR; i++) {
                y = 50 + (i - 1) * rh; x0 = lw
                printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", lw - 6, y + 15, lab[i]
                printf "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#4a7ab5\"/>\n", x0, y + 4, bw * med[i] / top, rh - 8
                printf "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", x0 + bw * lo[i] / top, x0 + bw * hi[i] / top, y + 11, y + 11
                if (lim[i] != "")
                    printf "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"red\" stroke-width=\"2\"/>\n", x0 + bw * lim[i] / top, x0 + bw * lim[i] / top, y + 1, y + rh - 1
                printf "<text x=\"%.1f\" y=\"%d\">%s</text>\n", x0 + bw * (hi[i] > med[i] ? hi[i] : med[i]) / top + 4, y + 15, (med[i] >= 100 ? sprintf("%d", med[i] + 0.5) : sprintf("%.1f", med[i]))
            }
            printf "<line x1=\"%d\" x2=\"%d\" y1=\"45\" y2=\"%d\" stroke=\"#999\"/>\n</svg>\n", lw, lw, 50 + NR * rh
        }' >"$file"
}

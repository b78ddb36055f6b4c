#!/bin/sh
# Layering check: server/ is laid out by layer, and a module may use (by
# symbol) only modules of its own folder or of lower folders, with no cycles.
# Judged from the object files, not from #include lines: module A depends on
# module B when an undefined symbol of A (nm -u) is a global that B defines
# (nm --defined-only -g).
#
# usage: layers.sh [--src SERVER-DIR] OBJECT-OR-DIRECTORY-OR-@LIST...
#   A directory is searched for *.o; @LIST names a file listing objects, one a
#   line (CMake writes one from $<TARGET_OBJECTS>, so no stale object counts). An object's module is its file name
#   (errors.c.o -> errors), its folder the name of the directory it sits in
#   (.../weftcore.dir/base/errors.c.o -> base).
#   With --src, the #include "folder/file.h" lines of SERVER-DIR/*/*.[ch] are
#   held to the same order (a header can pull a higher layer's types in
#   without any symbol showing it), and so are the types a header names: a
#   weft_* type whose struct/enum/union body (else its typedef) is in a
#   higher folder must not appear in a lower folder's header, not even as a
#   forward declaration or behind a pointer (adding a subsystem must not
#   mean editing the headers below it). Comments do not count. And only
#   base/h2o_glue.h includes h2o (<h2o.h>, <h2o/...>): one place pins what
#   every translation unit sees of it.
# Exit 0 when clean, 1 with every offending edge and cycle listed, 2 on misuse.

# The layers, bottom to top: the one place the order is written down.
LAYERS="base config core request dispatch db outbound ws edge plugin reload http ops dev process"

set -u
NM=${NM:-nm}

src=
if [ "${1:-}" = "--src" ]; then
    src=${2:-}
    shift 2 || exit 2
fi
if [ $# -eq 0 ] && [ -z "$src" ]; then
    # Run by hand from a checkout: the first build tree that has the server's
    # objects, with the includes of server/ held to the same order.
    here=$(cd "$(dirname "$0")/.." && pwd)
    for b in build build-test build-asan build-bench; do
        if [ -d "$here/$b/server/CMakeFiles/weftcore.dir" ]; then
            set -- "$here/$b/server/CMakeFiles/weftcore.dir" "$here/$b/server/CMakeFiles/weft.dir"
            src=$here/server
            break
        fi
    done
fi
if [ $# -eq 0 ]; then
    echo "usage: $0 [--src SERVER-DIR] OBJECT-OR-DIRECTORY-OR-@LIST..." >&2
    exit 2
fi

tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp" "$tmp.d" "$tmp.u"' EXIT INT TERM

objects() {
    for arg in "$@"; do
        case $arg in
        @*)
            if [ ! -f "${arg#@}" ]; then
                echo "layers.sh: no such list: ${arg#@}" >&2
                return 1
            fi
            grep -v '^$' "${arg#@}"
            continue ;;
        esac
        if [ -d "$arg" ]; then
            find "$arg" -type f -name '*.o' | LC_ALL=C sort
        elif [ -f "$arg" ]; then
            echo "$arg"
        else
            echo "layers.sh: no such object or directory: $arg" >&2
            return 1
        fi
    done
}

# types FILE FOLDER NAME: "B FOLDER TYPE" for each weft_* struct/enum/union
# body FILE defines, "T FOLDER TYPE" for each typedef, and for a header
# "N NAME:LINE FOLDER TYPE" for each weft_* word outside comments and strings.
types() {
    awk -v folder="$2" -v rel="$3" '
    function emit_names(t) {
        while (match(t, /weft_[A-Za-z0-9_]+/)) {
            print "N " rel ":" FNR " " folder " " substr(t, RSTART, RLENGTH)
            t = substr(t, RSTART + RLENGTH)
        }
    }
    {
        # Comments and string literals out, a block comment across lines too.
        line = $0; out = ""
        while (line != "") {
            if (incomment) {
                e = index(line, "*/")
                if (e == 0) { line = ""; break }
                line = substr(line, e + 2); incomment = 0; continue
            }
            if (match(line, /\/\*|\/\/|"/) == 0) { out = out line; break }
            out = out substr(line, 1, RSTART - 1); tok = substr(line, RSTART, RLENGTH)
            line = substr(line, RSTART + RLENGTH)
            if (tok == "//") break
            if (tok == "/*") { incomment = 1; out = out " "; continue }
            # a string: up to its closing quote (escapes skipped)
            while (match(line, /\\.|"/) && substr(line, RSTART, RLENGTH) != "\"") line = substr(line, RSTART + RLENGTH)
            line = (RSTART ? substr(line, RSTART + 1) : ""); out = out "\"\""
        }
        t = out
        while (match(t, /(struct|enum|union)[ \t]+weft_[A-Za-z0-9_]+[ \t]*\{/)) {
            n = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
            match(n, /weft_[A-Za-z0-9_]+/); print "B " folder " " substr(n, RSTART, RLENGTH)
        }
        if (match(out, /^[ \t]*}[ \t]*weft_[A-Za-z0-9_]+[ \t]*;/) ||
            (out ~ /^[ \t]*typedef/ && (match(out, /\(\*[ \t]*weft_[A-Za-z0-9_]+[ \t]*\)/) ||
                                       match(out, /weft_[A-Za-z0-9_]+[ \t]*(\[[^]]*\])?[ \t]*;/)))) {
            n = substr(out, RSTART, RLENGTH); match(n, /weft_[A-Za-z0-9_]+/)
            print "T " folder " " substr(n, RSTART, RLENGTH)
        }
        if (rel ~ /\.h$/) emit_names(out)
    }' "$1"
}

list=$(objects "$@") || exit 2
if [ -z "$list" ]; then
    echo "layers.sh: no object files under $*" >&2
    exit 2
fi

# One record per line for awk: "M object" for each object, "D object:... sym"
# for each global it defines and "U object:... sym" for each it needs. Two nm
# runs over all objects (nm -A names the object on each line).
echo "$list" | xargs -d '\n' "$NM" -A --defined-only -g > "$tmp.d" || nm_failed=1
echo "$list" | xargs -d '\n' "$NM" -A -u > "$tmp.u" || nm_failed=1
if [ -n "${nm_failed:-}" ]; then
    echo "layers.sh: $NM failed on the objects" >&2
    exit 2
fi
{
    echo "$list" | sed 's/^/M /'
    sed 's/^/D /' "$tmp.d"
    sed 's/^/U /' "$tmp.u"
    # "I FILE:LINE FOLDER INCLUDED-FOLDER" for each #include "folder/..."
    if [ -n "$src" ]; then
        for f in "$src"/*/*.[ch]; do
            [ -f "$f" ] || continue
            folder=$(basename "$(dirname "$f")")
            grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' "$f" |
                sed -n "s|^\([0-9]*\):[^\"]*\"\([a-z_]*\)/.*|I ${f#"$src"/}:\1 $folder \2|p"
            types "$f" "$folder" "${f#"$src"/}"
            [ "${f#"$src"/}" = base/h2o_glue.h ] ||
                grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*<h2o[./]' "$f" |
                sed "s|^\([0-9]*\):.*|H ${f#"$src"/}:\1|"
        done
    fi
} > "$tmp"

awk -v layers="$LAYERS" '
function folder_of(m) { return substr(m, 1, index(m, "/") - 1) }

# ".../weftcore.dir/base/errors.c.o" -> "base/errors"
function module_of(path,    n, parts, name) {
    n = split(path, parts, "/")
    name = parts[n]
    sub(/\.o$/, "", name)
    sub(/\.(c|S)$/, "", name)
    return (n >= 2 ? parts[n - 1] : ".") "/" name
}

function object_of(rest) { return substr(rest, 1, index(rest, ":") - 1) }

# Tarjan: strongly connected components; any with more than one module is a cycle.
function strong(v,    k, w) {
    idx[v] = low[v] = ++counter
    stack[++sp] = v; onstack[v] = 1
    for (k = 1; k <= adjn[v]; k++) {
        w = adj[v, k]
        if (!(w in idx)) {
            strong(w)
            if (low[w] < low[v]) low[v] = low[w]
        } else if (onstack[w] && idx[w] < low[v]) {
            low[v] = idx[w]
        }
    }
    if (low[v] == idx[v]) {
        ++ncomp
        do {
            w = stack[sp--]; onstack[w] = 0
            comp[w] = ncomp; compsize[ncomp]++
        } while (w != v)
    }
}

# The shortest cycle through r inside its component, by breadth-first search.
function cycle_through(r,    head, tail, q, k, u, w, found, path, n, i, hop) {
    split("", prev); split("", seen)
    head = 1; tail = 0; q[++tail] = r; seen[r] = 1; found = ""
    while (head <= tail && found == "") {
        u = q[head++]
        for (k = 1; k <= adjn[u]; k++) {
            w = adj[u, k]
            if (comp[w] != comp[r]) continue
            if (w == r) { found = u; break }
            if (!(w in seen)) { seen[w] = 1; prev[w] = u; q[++tail] = w }
        }
    }
    n = 0
    for (u = found; u != r; u = prev[u]) chain[++n] = u
    chain[++n] = r
    path = r
    for (i = n - 1; i >= 0; i--) {
        hop = (i == 0) ? r : chain[i]
        path = path " -> " hop " (" syms[chain[i + 1], hop] ")"
    }
    return path
}

BEGIN {
    nl = split(layers, lay, " ")
    for (i = 1; i <= nl; i++) rank[lay[i]] = i
}
$1 == "M" { m = module_of(substr($0, 3)); if (!(m in modules)) nmod++; modules[m] = 1; next }
$1 == "D" { m = module_of(object_of(substr($0, 3))); definers[$NF] = (($NF in definers) ? definers[$NF] " " : "") m; next }
$1 == "I" { inc[++ninc] = $0; next }
# A type belongs to the lowest folder with its body, else to the lowest with
# its typedef (a typedef of a higher struct in a lower header is no alibi).
$1 == "B" { if (!($3 in body) || rank[$2] < rank[body[$3]]) body[$3] = $2; next }
$1 == "T" { if (!($3 in tdef) || rank[$2] < rank[tdef[$3]]) tdef[$3] = $2; next }
$1 == "N" { named[++nnamed] = $0; next }
$1 == "H" { h2o[++nh2o] = $2; next }
$1 == "U" { need[++nneed] = module_of(object_of(substr($0, 3))) " " $NF; next }
END {
    bad = 0
    for (m in modules) {
        if (!(folder_of(m) in rank)) {
            printf "unknown folder %s (module %s): add it to LAYERS in tests/layers.sh\n", folder_of(m), m
            bad = 1
        }
    }
    for (i = 1; i <= nneed; i++) {
        split(need[i], f, " ")
        a = f[1]; s = f[2]
        if (!(s in definers)) continue
        nd = split(definers[s], ds, " ")
        for (j = 1; j <= nd; j++) {
            b = ds[j]
            if (b == a) continue
            if (!((a, b) in syms)) {
                syms[a, b] = s
                adj[a, ++adjn[a]] = b
                edges[++nedges] = a SUBSEP b
            } else if (index(" " syms[a, b] ", ", " " s ", ") == 0) {
                syms[a, b] = syms[a, b] ", " s
            }
        }
    }

    up = 0
    for (e = 1; e <= nedges; e++) {
        split(edges[e], ab, SUBSEP)
        fa = folder_of(ab[1]); fb = folder_of(ab[2])
        if ((fa in rank) && (fb in rank) && rank[fb] > rank[fa]) {
            printf "upward: %s -> %s (%s above %s): %s\n", ab[1], ab[2], fb, fa, syms[ab[1], ab[2]]
            up++
        }
    }

    for (i = 1; i <= ninc; i++) {
        split(inc[i], f, " ")
        if ((f[3] in rank) && (f[4] in rank) && rank[f[4]] > rank[f[3]]) {
            printf "upward include: %s: %s includes %s/ (%s above %s)\n", f[2], f[3], f[4], f[4], f[3]
            up++
        }
    }

    for (i = 1; i <= nnamed; i++) {
        split(named[i], f, " ")
        t = f[4]; owner = (t in body) ? body[t] : ((t in tdef) ? tdef[t] : "")
        if (owner == "" || !(f[3] in rank) || !(owner in rank) || rank[owner] <= rank[f[3]] || ((f[2], t) in told))
            continue
        told[f[2], t] = 1
        printf "upward type: %s: %s names %s (%s/, above %s)\n", f[2], f[3], t, owner, f[3]
        up++
    }

    for (i = 1; i <= nh2o; i++) {
        printf "h2o include: %s: only base/h2o_glue.h includes h2o\n", h2o[i]
        bad = 1
    }

    counter = 0; sp = 0; ncomp = 0
    for (m in modules) if (!(m in idx)) strong(m)
    cycles = 0
    for (m in modules) {
        c = comp[m]
        if (compsize[c] < 2 || (c in reported)) continue
        reported[c] = 1; cycles++
        members = ""
        for (x in modules) if (comp[x] == c) members = members " " x
        printf "cycle of %d modules:%s\n  %s\n", compsize[c], members, cycle_through(m)
    }

    printf "%d modules, %d dependencies, %d upward, %d cycles\n", nmod, nedges, up, cycles
    exit (bad || up || cycles) ? 1 : 0
}' "$tmp"

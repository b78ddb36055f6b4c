#!/bin/sh
# Self-test of tests/layers.sh: tiny throwaway objects laid out as server/'s
# folders show that the check passes on a clean layout and fails, naming the
# edge or the cycle, on an upward dependency and on a cycle.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT INT TERM
fails=0

# obj DIR/NAME 'C source': compiles one object into the layout.
obj() {
    mkdir -p "$work/$1" && rm -f "$work/$1/$2.o"
    printf '%s\n' "$3" > "$work/$1/$2.c"
    "$CC" -c -o "$work/$1/$2.o" "$work/$1/$2.c" || exit 2
}

# expect STATUS PATTERN...: runs the check on the layout; its exit status must
# be STATUS and its output must contain every PATTERN (fixed strings).
expect() {
    want=$1; shift
    out=$(sh "$here/layers.sh" "$work" 2>&1); got=$?
    if [ "$got" -ne "$want" ]; then
        printf 'FAIL: %s: exit %d, wanted %d; output:\n%s\n' "$case" "$got" "$want" "$out"
        fails=$((fails + 1)); return
    fi
    for pat in "$@"; do
        if ! printf '%s\n' "$out" | grep -qF -- "$pat"; then
            printf 'FAIL: %s: output lacks "%s"; output:\n%s\n' "$case" "$pat" "$out"
            fails=$((fails + 1)); return
        fi
    done
    echo "ok: $case"
}

case="clean: http uses base, base uses base"
obj base a 'int base_a(void); int base_c(void); int base_a(void) { return base_c() + 1; }'
obj base c 'int base_c(void); int base_c(void) { return 2; }'
obj http b 'int base_a(void); int http_b(void); int http_b(void) { return base_a(); }'
expect 0 "3 modules, 2 dependencies, 0 upward, 0 cycles"

case="upward: base calls http"
obj base a 'int http_b(void); int base_c(void); int base_a(void); int base_a(void) { return http_b() + base_c(); }'
expect 1 "upward: base/a -> http/b (http above base): http_b" "1 upward"

case="upward: a variable counts like a function"
obj base a 'extern int http_v; int base_a(void); int base_a(void) { return http_v; }'
obj http b 'int http_v = 3; int base_a(void); int http_b(void); int http_b(void) { return base_a(); }'
expect 1 "upward: base/a -> http/b (http above base): http_v"

case="cycle inside one folder"
obj base a 'int base_c(void); int base_a(void); int base_a(void) { return base_c(); }'
obj base c 'int base_a(void); int base_c(void); int base_c(void) { return base_a(); }'
obj http b 'int http_b(void); int http_b(void) { return 0; }'
expect 1 "cycle of 2 modules:" "-> base/c (base_c)" "-> base/a (base_a)" "0 upward, 1 cycles"

case="a cycle across three modules and two folders is also an upward edge"
obj base a 'int base_c(void); int base_a(void); int base_a(void) { return base_c(); }'
obj base c 'int http_b(void); int base_c(void); int base_c(void) { return http_b(); }'
obj http b 'int base_a(void); int http_b(void); int http_b(void) { return base_a(); }'
expect 1 "cycle of 3 modules:" "upward: base/c -> http/b" "1 upward, 1 cycles"

case="a folder missing from the layer list"
rm -f "$work"/base/*.o "$work"/http/*.o
obj nowhere x 'int x(void); int x(void) { return 0; }'
expect 1 "unknown folder nowhere"

case="an object nm cannot read is a usage error, not a pass"
echo "not an object" > "$work/nowhere/x.o"
expect 2 "failed on the objects"

case="an include of a higher layer, with no symbol used"
rm -f "$work"/nowhere/x.o
mkdir -p "$work/src/base" "$work/src/http"
printf '#include "http/b.h"\n' > "$work/src/base/a.c"
printf '#include "base/a.h"\n' > "$work/src/http/b.c"
obj base a 'int base_a(void); int base_a(void) { return 0; }'
out=$(sh "$here/layers.sh" --src "$work/src" "$work/base" 2>&1); got=$?
if [ "$got" -ne 1 ] || ! printf '%s\n' "$out" | grep -qF 'upward include: base/a.c:1: base includes http/'; then
    printf 'FAIL: %s: exit %d; output:\n%s\n' "$case" "$got" "$out"
    fails=$((fails + 1))
else
    echo "ok: $case"
fi

# srccheck CASE STATUS PATTERN...: layers.sh --src on $work/types (with
# one clean object) must exit STATUS with every PATTERN in its output.
srccheck() {
    case=$1; want=$2; shift 2
    out=$(sh "$here/layers.sh" --src "$work/types" "$work/base/a.o" 2>&1); got=$?
    if [ "$got" -ne "$want" ]; then
        printf 'FAIL: %s: exit %d, wanted %d; output:\n%s\n' "$case" "$got" "$want" "$out"
        fails=$((fails + 1)); return
    fi
    for pat in "$@"; do
        if ! printf '%s\n' "$out" | grep -qF -- "$pat"; then
            printf 'FAIL: %s: output lacks "%s"; output:\n%s\n' "$case" "$pat" "$out"
            fails=$((fails + 1)); return
        fi
    done
    echo "ok: $case"
}

mkdir -p "$work/types/core" "$work/types/db"
printf 'struct weft_cx {\n    int n;\n};\n' > "$work/types/core/a.c"
printf '/* the connection (weft_dbx) is in db.c: a comment may say so */\nint a_count(const char *why); /* "weft_dbx" */\n' > "$work/types/core/a.h"
printf 'struct weft_dbx {\n    struct weft_cx *c;\n};\ntypedef int weft_dbn;\n' > "$work/types/db/b.c"
printf 'typedef struct weft_dbx weft_dbx;\nstruct weft_cx;\nweft_dbx *b_get(struct weft_cx *c);\n' > "$work/types/db/b.h"
srccheck "types: a higher header naming a lower type, comments and strings naming a higher one" 0 "0 upward"

printf '#include <stddef.h>\nstruct weft_dbx;\nstruct weft_dbx *a_db(void);\n' > "$work/types/core/a.h"
srccheck "types: a lower header naming a higher struct (forward declaration and pointer)" 1 \
    "upward type: core/a.h:2: core names weft_dbx (db/, above core)" "core/a.h:3:" "2 upward"

printf 'typedef struct weft_dbx weft_dbx;\nweft_dbx *a_db(void);\n' > "$work/types/core/a.h"
srccheck "types: a lower header's own typedef of a higher struct is no alibi" 1 \
    "upward type: core/a.h:1: core names weft_dbx (db/, above core)"

printf 'typedef struct {\n    weft_dbn n;\n} a_pair;\n' > "$work/types/core/a.h"
srccheck "types: a typedef declared in a higher folder, used in a lower header" 1 \
    "upward type: core/a.h:2: core names weft_dbn (db/, above core)"

printf '#include <stddef.h>\n' > "$work/types/core/a.h"
mkdir -p "$work/types/base"
printf '#include <h2o.h>\n' > "$work/types/base/h2o_glue.h"
printf '#include "base/h2o_glue.h"\n#include <h2o/websocket.h>\n' > "$work/types/db/b.c"
srccheck "h2o included outside base/h2o_glue.h" 1 "h2o include: db/b.c:2: only base/h2o_glue.h includes h2o"

# On the server's real objects (CMake passes their list): a base module that
# starts using the reload layer is caught.
if [ -n "${LAYERS_OBJECTS:-}" ]; then
    case="the real server plus a base module calling reload/"
    rm -rf "$work"/*
    obj base intruder 'void *weft_reload_serving(void); void *intrude(void); void *intrude(void) { return weft_reload_serving(); }'
    out=$(sh "$here/layers.sh" "@$LAYERS_OBJECTS" "$work/base/intruder.o" 2>&1); got=$?
    if [ "$got" -ne 1 ] || ! printf '%s\n' "$out" | grep -qF "upward: base/intruder -> reload/reload (reload above base): weft_reload_serving"; then
        printf 'FAIL: %s: exit %d; output:\n%s\n' "$case" "$got" "$out"
        fails=$((fails + 1))
    else
        echo "ok: $case"
    fi
fi

[ "$fails" -eq 0 ] || exit 1

# Shared by the bench scripts (sourced, not run).

# replace_section DOC BEGIN_MARK END_MARK TEXT — puts TEXT (which carries both
# markers) in place of the marked section of DOC, or appends it if DOC has none.
replace_section() {
    local doc=$1 begin=$2 end=$3 text=$4 tmp
    tmp=$(mktemp)
    printf '%s\n' "$text" > "$tmp.section"
    if grep -qF "$begin" "$doc"; then
        awk -v b="$begin" -v e="$end" -v f="$tmp.section" \
            'BEGIN { while ((getline l < f) > 0) sec = sec l "\n" }
             $0 == b { printf "%s", sec; skip = 1; next }
             $0 == e { skip = 0; next }
             !skip' "$doc" > "$tmp"
        cp "$tmp" "$doc"
    else
        printf '\n%s\n' "$text" >> "$doc"
    fi
    rm -f "$tmp" "$tmp.section"
}

# shellcheck shell=sh
# install-md.sh — sourced by the packaging checks that follow the guide:
# docs/INSTALL.md's ```sh commands, read section by section from
# $install_md, and run as a reader types them. Where they run is the
# caller's: it defines doc_exec DIR CODE (check-debian.sh: in its own shell;
# check-systemd.sh: inside the container) and may set doc_where (words for
# the failure message). $tmp, fail and note are the caller's.

# The ```sh commands of the section whose heading starts with $1 ("## 8.")
# of $2 (default $install_md), one per line: continuation lines joined,
# blank and comment lines dropped.
doc_commands() {
  awk -v want="$1" '
    /^## / { inside = index($0, want) == 1; code = 0; next }
    inside && /^```sh$/ { code = 1; next }
    inside && /^```/ { code = 0; next }
    inside && code {
      line = $0
      sub(/^[ \t]+/, "", line)
      if (cont != "") { line = cont " " line; cont = "" }
      if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
      if (line == "" || line ~ /^#/) next
      print line
    }' "${2:-$install_md}"
}
# The commands of section $2 of $1 (README.md's "## Installing with apt")
# that no section of docs/INSTALL.md ($install_md) has, trailing comments
# aside: README's short path must be made of the guide's commands, which
# the caller runs, so that following either is following what was tested.
# Prints nothing when every one is there.
doc_untested_in() {
  doc_commands "## " "$install_md" | sed 's/[[:space:]]\{1,\}#.*$//' | sort -u >"$tmp/doc.tested"
  doc_commands "$2" "$1" | sed 's/[[:space:]]\{1,\}#.*$//' | while IFS= read -r cmd; do
    grep -qxF -- "$cmd" "$tmp/doc.tested" || printf '%s\n' "$cmd"
  done
}
# Runs section $1's commands in directory $2, in order; commands matching
# the ERE $3 are left to the caller; after a command matching the ERE $4 the
# shell code $5 runs (what a reader does by hand between two commands).
# curl as the guide writes it, but an error status fails, and a route just
# added gets the seconds it may take to appear.
doc_run() {
  doc_commands "$1" >"$tmp/doc.cmds"
  [ -s "$tmp/doc.cmds" ] || fail "docs/INSTALL.md has no sh commands under '$1'"
  while IFS= read -r cmd; do
    if [ -n "${3:-}" ] && printf '%s\n' "$cmd" | grep -Eq "$3"; then
      note "INSTALL.md $1 (done by this script instead): $cmd"
      continue
    fi
    note "INSTALL.md $1: $cmd"
    case $cmd in curl\ *) cmd="curl -fsS --max-time 10 --retry 15 --retry-delay 1 --retry-all-errors ${cmd#curl }" ;; esac
    if ! doc_exec "$2" "$cmd" </dev/null >>"$tmp/doc.log" 2>&1; then
      tail -n 30 "$tmp/doc.log" >&2
      fail "docs/INSTALL.md '$1': \`$cmd\` failed${doc_where:-} (output above)"
    fi
    if [ -n "${4:-}" ] && printf '%s\n' "$cmd" | grep -Eq "$4"; then
      doc_exec "$2" "$5" >>"$tmp/doc.log" 2>&1 || fail "docs/INSTALL.md '$1': the step after \`$cmd\` failed"
    fi
  done <"$tmp/doc.cmds"
}

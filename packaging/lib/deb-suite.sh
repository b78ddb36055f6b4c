# shellcheck shell=sh
# deb-suite.sh — sourced by the packaging checks that make a root with a
# .deb's dependencies: why mmdebstrap could not, in the user's terms.
#
#   weft_deb_suite_hint LOG DEB SUITE DEBS_DIR
#       prints, when mmdebstrap's LOG says packages of DEB's Depends do not
#       exist in SUITE, which ones, and that .debs built on another Debian
#       release name other library packages (Debian 13's t64 libraries, its
#       newer libpq and libconfig sonames); nothing otherwise. DEBS_DIR is
#       where the .debs came from (WEFT_DEBS_DIR), empty when built here.

weft_deb_suite_hint() {
  missing=$(tr -d "'" <"$1" 2>/dev/null | sed -n -E -e 's/.*Unable to locate package ([^ ]+).*/\1/p' \
    -e 's/.*Depends: ([^ ]+).* but it is not installable.*/\1/p' -e 's/.*Package ([^ ]+) has no installation candidate.*/\1/p' |
    sort -u | tr '\n' ' ')
  [ -n "$missing" ] || return 0
  printf '%s\n' "$(basename "$2") depends on packages Debian's $3 does not have: $missing"
  if [ -n "$4" ]; then
    printf '%s\n' "  WEFT_DEBS_DIR=$4: .debs built on another Debian release name that release's libraries;" \
      "  build them on (or for) $3 — for trixie packaging/build-trixie-debs.sh — or leave WEFT_DEBS_DIR unset"
  fi
}
